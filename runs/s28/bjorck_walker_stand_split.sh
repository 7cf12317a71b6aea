#!/bin/bash
# s28: the rest of runs/s23/bjorck_walker_stand_300k.sh split over the two cores (one run per core). Each group
# runs its (variants, seeds) in turn; finished runs are reused, stopped ones resume. Afterwards the full s23
# command reuses every run and writes the whole report. Usage: bjorck_walker_stand_split.sh a|b
cd /work/main
mkdir -p /root/actorq_runs/lowp_sac_walker_stand && ln -sfn /root/actorq_runs/lowp_sac_walker_stand runs/lowp_sac_walker_stand
study() {  # seeds variants
  python -m experiments.lowp_study --config=configs/sac_actorq.py:walker_stand \
      --seeds="$1" --variants="$2" --noablation --noactorq_comparison \
      --out_dir=runs/lowp_sac_walker_stand --keep_records=docs/results/lowp_sac_walker_stand
}
case "$1" in
  a) study 1 fp16_naive && study 0,1 fp16_fixed && study 1 bf16_fixed ;;
  b) study 0 bf16_fixed && study 0,1 fp16_amp ;;
  *) echo "error: group must be a or b" >&2; exit 2 ;;
esac
