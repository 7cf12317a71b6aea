#!/bin/bash
# #26 item 6: one (variant, seed) of Björck et al.'s SAC study, so that each piece ends within a session
# (a run left stopped at a session's end is lost if the next session gets another machine; its records so
# far are kept in docs/results/lowp_sac_<task>). Same out_dir and records as runs/s28/bjorck_split.sh.
#   walker_stand: ~45-70 min per run on Genoa; cheetah_run (500k env steps): ~80-115 min (estimated).
# Usage: bjorck_one.sh walker_stand|cheetah_run fp32|fp16_naive|fp16_fixed|bf16_fixed|fp16_amp <seed>
cd /work/main
task=$1; variant=$2; seed=$3
case "$task" in walker_stand|cheetah_run) ;; *) echo "error: task must be walker_stand or cheetah_run" >&2; exit 2 ;; esac
case "$variant" in fp32|fp16_naive|fp16_fixed|bf16_fixed|fp16_amp) ;;
  *) echo "error: variant must be fp32, fp16_naive, fp16_fixed, bf16_fixed or fp16_amp" >&2; exit 2 ;; esac
case "$seed" in [0-9]*) ;; *) echo "error: seed must be a number" >&2; exit 2 ;; esac
mkdir -p /root/actorq_runs/lowp_sac_$task && ln -sfn /root/actorq_runs/lowp_sac_$task runs/lowp_sac_$task
exec python -m experiments.lowp_study --config=configs/sac_actorq.py:$task \
    --seeds=$seed --variants=$variant --noablation --noactorq_comparison \
    --out_dir=runs/lowp_sac_$task --keep_records=docs/results/lowp_sac_$task
