#!/bin/bash
# #26 item 6 on the second task: SAC cheetah_run at the preset's 500k env steps (250k agent steps; published
# SAC, tdmpc2 with action repeat 2, is 310 at 100k and 595 at 500k agent steps), 2 seeds, fp32 / naive fp16 /
# fp16 + the six fixes / bf16 + the fixes / supervised mixed precision, split over the two cores (one run per
# core). Estimated on Genoa from walker_stand's 300k: fp32 ~80 min, fixed fp16/bf16 ~115 min, amp ~95 min per
# run; ~7 h per core. Finished runs are reused, stopped ones resume: rerun the same command.
# Usage: bjorck_cheetah_run_split.sh a|b   (then the report: add --report_only, or run both groups to the end)
cd /work/main
mkdir -p /root/actorq_runs/lowp_sac_cheetah_run && ln -sfn /root/actorq_runs/lowp_sac_cheetah_run runs/lowp_sac_cheetah_run
study() {  # seeds variants
  python -m experiments.lowp_study --config=configs/sac_actorq.py:cheetah_run \
      --seeds="$1" --variants="$2" --noablation --noactorq_comparison \
      --out_dir=runs/lowp_sac_cheetah_run --keep_records=docs/results/lowp_sac_cheetah_run
}
case "$1" in
  a) study 0,1 fp32,fp16_fixed ;;
  b) study 0,1 fp16_naive,bf16_fixed,fp16_amp ;;
  *) echo "error: group must be a or b" >&2; exit 2 ;;
esac
