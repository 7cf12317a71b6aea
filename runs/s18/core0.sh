#!/bin/bash
# Core 0 (Xeon L3 480 MiB, 2026-12-06):
# 1. #23/#25: DDPG HalfCheetah int8 seed 1 again, with the recipe recalibrated at each doubling of the
#    replay inserts (commit 18fa7b5); the same seed on the same machine without it (calibrated on the
#    first 25k uniform-random states only) ended 10361.2, fp32 actors 11784.1.
# 2. #26: the DDPG LunarLanderContinuous QAT sweep on seed 0 (fp32 first, then 8..2 bits).
# Stop with SIGTERM; rerun this script to resume (finished runs are skipped).
cd /work/main
mkdir -p /root/actorq_runs/ddpg_halfcheetah /root/actorq_runs/qat_ddpg_lunarlander_continuous
ln -sfn /root/actorq_runs/ddpg_halfcheetah runs/ddpg_halfcheetah
ln -sfn /root/actorq_runs/qat_ddpg_lunarlander_continuous runs/qat_ddpg_lunarlander_continuous
python -m experiments.learning_check --config=configs/ddpg_actorq.py:halfcheetah --quantizers=int8 --seeds=1 \
    --threshold=8000 --out_dir=runs/ddpg_halfcheetah/seed1_recal
python -m experiments.qat_sweep --config=configs/ddpg_actorq.py:lunarlander_continuous --bits=8,6,5,4,3,2 \
    --seeds=0 --out_dir=runs/qat_ddpg_lunarlander_continuous
