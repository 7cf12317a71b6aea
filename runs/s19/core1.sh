#!/bin/bash
# Core 1 (Xeon L3 480 MiB, 2026-12-06 session 2): #26 DDPG LunarLanderContinuous QAT, seed 0, resumes at 5 bits
# (fp32, 8 and 6 bits finished last session). Stop with SIGTERM; rerun to resume (finished runs are skipped).
cd /work/main
mkdir -p /root/actorq_runs/qat_ddpg_lunarlander_continuous
ln -sfn /root/actorq_runs/qat_ddpg_lunarlander_continuous runs/qat_ddpg_lunarlander_continuous
python -m experiments.qat_sweep --config=configs/ddpg_actorq.py:lunarlander_continuous --bits=8,6,5,4,3,2 \
    --seeds=0 --out_dir=runs/qat_ddpg_lunarlander_continuous
