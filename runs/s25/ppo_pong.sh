#!/bin/bash
# #24 Atari Pong, PPO (CleanRL's ppo_atari settings, the preset's 10M-step schedule), int8 recipe
# actors, seed $1 (default 0). One session on one core is the budget; stop with SIGTERM (a final
# checkpoint is written) and rerun the same command to resume toward 10M.
cd /work/main
seed=${1:-0}
run=runs/ppo_pong/seed$seed
mkdir -p /root/actorq_runs/ppo_pong && ln -sfn /root/actorq_runs/ppo_pong runs/ppo_pong
resume=""; [ -f $run/config.json ] && resume=--resume
python -m experiments.ppo_actorq --config=configs/ppo_actorq.py:pong --config.seed=$seed \
    --config.run_dir=$run --config.eval_every_steps=20480 --config.eval_episodes=5 $resume
