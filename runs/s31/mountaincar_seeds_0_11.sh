#!/bin/bash
# #25: seeds 0-11 of both arms again, on the Xeon that ran seeds 12-35 (runs/s30/mountaincar_more_seeds.sh),
# so that all 36 seeds per arm come from one machine. The first 12 seeds ran on Genoa (5 vs 8 hold); the
# pooled 0-35 count mixed two machines. One seed of each arm in turn; ~2 min a run on one core. Rerun to
# resume: finished runs are reused.
cd /work/main
out=runs/recipe_head_mountaincar_more
mkdir -p /root/actorq_runs/recipe_head_mountaincar_more && ln -sfn /root/actorq_runs/recipe_head_mountaincar_more $out
for seed in $(seq 0 11); do
  python -m experiments.learning_check --config=configs/dqn_actorq.py:mountaincar_small --quantizers=int8,fp32 \
      --seeds=$seed --threshold=-110 --out_dir=$out > /dev/null || exit 1
done
python -m experiments.learning_check --config=configs/dqn_actorq.py:mountaincar_small --quantizers=int8,fp32 \
    --seeds=$(seq -s, 0 35) --threshold=-110 --out_dir=$out \
    --keep_records=docs/results/recipe_head_dqn_mountaincar_more
