#!/bin/bash
# Core 0 (#23 then #26, Xeon, 2026-12-05): DDPG HalfCheetah with fp32 actors, seed 1 (the issue's
# int8-vs-fp32 pair on a second seed), then the DDPG LunarLanderContinuous QAT sweep on seed 0
# (fp32 first, then 8..2 bits). Run dirs live under /root/actorq_runs (runs/<name> links there).
# Stop with SIGTERM; rerun this script to resume (finished runs are skipped).
cd /work/main
for d in ddpg_halfcheetah qat_ddpg_lunarlander_continuous; do
    mkdir -p /root/actorq_runs/$d && ln -sfn /root/actorq_runs/$d runs/$d
done
python -m experiments.learning_check --config=configs/ddpg_actorq.py:halfcheetah --quantizers=fp32 --seeds=1 \
    --threshold=8000 --out_dir=runs/ddpg_halfcheetah/seed1
python -m experiments.qat_sweep --config=configs/ddpg_actorq.py:lunarlander_continuous --bits=8,6,5,4,3,2 \
    --seeds=0 --out_dir=runs/qat_ddpg_lunarlander_continuous
