#!/bin/bash
# Core 1 after PPO MinAtar Breakout seed 1: #24 PPO MinAtar SpaceInvaders seed 1 (resumable: rerun).
cd /work/main
while pgrep -f "minatar_breakout --config.seed=1" > /dev/null; do sleep 20; done
bash runs/s13/ppo_minatar.sh space_invaders 1
