#!/bin/bash
# #24: PPO MinAtar Breakout and SpaceInvaders seed 1 under both evaluation protocols, fp32 and int8, 50 episodes.
cd /work/main
python -m experiments.eval_protocols --run_dir=runs/ppo_minatar_breakout/seed1 --episodes=50 \
    --quantizers=fp32,int8 --reference=28 --out_dir=docs/results/protocols_ppo_minatar/breakout_seed1
python -m experiments.eval_protocols --run_dir=runs/ppo_minatar_space_invaders/seed1 --episodes=50 \
    --quantizers=fp32,int8 --reference=131 --out_dir=docs/results/protocols_ppo_minatar/space_invaders_seed1
