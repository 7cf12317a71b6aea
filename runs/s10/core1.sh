#!/bin/bash
# Session 10, core 1: finish DQN LunarLander QAT (seed 0 int3, int2; seed 1 at 4, 5, 6), then PPO HalfCheetah
# QAT seed 1 (int5, int4) and seed 0 (int5, int3), then DDPG LunarLanderContinuous. Rerun to continue.
cd /work/main
bash runs/s9/qat_dqn_lunarlander.sh
bash runs/s9/qat_ppo_halfcheetah_core1.sh
bash runs/s9/ddpg_lunarlander_continuous.sh int8 0
