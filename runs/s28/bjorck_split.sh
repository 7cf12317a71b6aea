#!/bin/bash
# #26 item 6: Björck et al.'s SAC study (fp32 / naive fp16 / fp16 + the six fixes / bf16 + the fixes / supervised
# mixed precision, 2 seeds) split over the two cores, one run per core. Finished runs are reused, stopped ones
# resume: rerun the same command. The whole study in one command is runs/s23/bjorck_walker_stand_300k.sh (same
# out_dir); the report as it stands: lowp_study ... --report_only (docs/low_precision_learner.md).
#   walker_stand: the preset's 300k; ~45-70 min per run on Genoa (naive fp16 fails in seconds).
#   cheetah_run: the preset's 500k env steps (250k agent steps; published SAC, tdmpc2 with action repeat 2, is 310
#     at 100k and 595 at 500k agent steps); estimated ~80-115 min per run on Genoa, ~7 h per core.
# Usage: bjorck_split.sh walker_stand|cheetah_run a|b
cd /work/main
task=$1
case "$task" in walker_stand|cheetah_run) ;; *) echo "error: task must be walker_stand or cheetah_run" >&2; exit 2 ;; esac
mkdir -p /root/actorq_runs/lowp_sac_$task && ln -sfn /root/actorq_runs/lowp_sac_$task runs/lowp_sac_$task
study() {  # seeds variants
  python -m experiments.lowp_study --config=configs/sac_actorq.py:$task \
      --seeds="$1" --variants="$2" --noablation --noactorq_comparison \
      --out_dir=runs/lowp_sac_$task --keep_records=docs/results/lowp_sac_$task
}
case "$task:$2" in
  walker_stand:a) study 1 fp16_naive && study 0,1 fp16_fixed && study 1 bf16_fixed ;;
  walker_stand:b) study 0 bf16_fixed && study 0,1 fp16_amp ;;
  cheetah_run:a) study 0,1 fp32,fp16_fixed ;;
  cheetah_run:b) study 0,1 fp16_naive,bf16_fixed,fp16_amp ;;
  *) echo "error: group must be a or b" >&2; exit 2 ;;
esac
