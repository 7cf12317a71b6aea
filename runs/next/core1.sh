#!/bin/bash
# Core 1 (#23): DDPG Walker2d seed 1 (int8 actors; resumes), then DDPG HalfCheetah with fp32
# actors, seed 1, then DDPG BipedalWalker seed 1. Resumable as core0.sh.
cd /work/main
bash runs/s11/ddpg_row.sh walker2d 1 1250
mkdir -p /root/actorq_runs/ddpg_halfcheetah && ln -sfn /root/actorq_runs/ddpg_halfcheetah runs/ddpg_halfcheetah
python -m experiments.learning_check --config=configs/ddpg_actorq.py:halfcheetah --quantizers=fp32 --seeds=1 \
    --threshold=8000 --out_dir=runs/ddpg_halfcheetah/seed1
bash runs/s11/ddpg_row.sh bipedalwalker 1 100
