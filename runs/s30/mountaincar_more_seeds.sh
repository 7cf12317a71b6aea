#!/bin/bash
# #25: more seeds for "MountainCar holds >= -110 in at least as many seeds with recipe actors as with
# fp32 actors". Seeds 0-11 of each arm ran on Genoa (docs/ptq.md: 5 vs 8 hold, Fisher p ~ 0.4); this adds
# seeds 12-35 of both arms on one machine, one seed of each arm in turn so that a stop leaves the arms
# equal. ~2 min a run on one Xeon core. Rerun to resume: finished runs are reused.
cd /work/main
out=runs/recipe_head_mountaincar_more
mkdir -p /root/actorq_runs/recipe_head_mountaincar_more && ln -sfn /root/actorq_runs/recipe_head_mountaincar_more $out
# FIRST/LAST: the seeds to train (default 12-35); REPORT_FIRST: the report covers REPORT_FIRST-35 (default 12).
for seed in $(seq ${FIRST:-12} ${LAST:-35}); do
  python -m experiments.learning_check --config=configs/dqn_actorq.py:mountaincar_small --quantizers=int8,fp32 \
      --seeds=$seed --threshold=-110 --out_dir=$out > /dev/null || exit 1
done
python -m experiments.learning_check --config=configs/dqn_actorq.py:mountaincar_small --quantizers=int8,fp32 \
    --seeds=$(seq -s, ${REPORT_FIRST:-12} 35) --threshold=-110 --out_dir=$out \
    --keep_records=docs/results/recipe_head_dqn_mountaincar_more
