#!/bin/bash
# Core 0 this session (#25, then #24/#26), each resumable by rerunning this script:
# 1. D4PG cheetah_run_cpu with the default int8 recipe actors, seed 2 (seeds 0 and 1 are in
#    docs/ptq.md: 810.6 on Milan, 731.5 on the Xeon); a finished run is only reused.
# 2. PPO MinAtar SpaceInvaders seed 0 (int8 actors, 10M steps).
cd /work/main
mkdir -p /root/actorq_runs/recipe_learning_d4pg_cheetah_run
ln -sfn /root/actorq_runs/recipe_learning_d4pg_cheetah_run runs/recipe_learning_d4pg_cheetah_run
python -m experiments.learning_check --config=configs/d4pg_actorq.py:cheetah_run_cpu --quantizers=int8 \
    --seeds=2 --threshold=732 --out_dir=runs/recipe_learning_d4pg_cheetah_run
bash runs/s13/ppo_minatar.sh space_invaders 0
