#!/bin/bash
# Next session, core 1: the lag-0 mismatch comparison (PPO HalfCheetah, seeds 0 and 1; resumes), DDPG
# LunarLanderContinuous (resumes), then DDPG Walker2d seed 0 (#23). Rerun to continue.
cd /work/main
bash runs/s10/mismatch_lag0.sh 0
bash runs/s10/mismatch_lag0.sh 1
bash runs/s9/ddpg_lunarlander_continuous.sh int8 0
python -m experiments.learning_check --config=configs/ddpg_actorq.py:walker2d --quantizers=int8 --seeds=0 \
    --threshold=1250 --out_dir=runs/ddpg_walker2d/seed0

python -m experiments.learning_check --config=configs/ddpg_actorq.py:walker2d --quantizers=int8 --seeds=1 \
    --threshold=1250 --out_dir=runs/ddpg_walker2d/seed1
