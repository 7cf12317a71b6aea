#!/bin/bash
# Core 0 (#26, Xeon L3 480 MiB, 2026-12-06): the DDPG LunarLanderContinuous QAT sweep on seed 0
# (fp32 first, then 8..2 bits; QAT from half the budget). Stop with SIGTERM; rerun to resume
# (finished runs are skipped).
cd /work/main
mkdir -p /root/actorq_runs/qat_ddpg_lunarlander_continuous
ln -sfn /root/actorq_runs/qat_ddpg_lunarlander_continuous runs/qat_ddpg_lunarlander_continuous
python -m experiments.qat_sweep --config=configs/ddpg_actorq.py:lunarlander_continuous --bits=8,6,5,4,3,2 \
    --seeds=0 --out_dir=runs/qat_ddpg_lunarlander_continuous
