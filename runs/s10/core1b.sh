#!/bin/bash
# Session 10, core 1 (after the DQN LunarLander QAT sweep, started by core1.sh): PPO HalfCheetah QAT seed 1
# (int5, int4) and seed 0 (int5, int3); the lag-0 mismatch comparison (seeds 0, 1); DDPG LunarLanderContinuous.
# Rerun to continue (each step resumes from its checkpoints).
cd /work/main
bash runs/s9/qat_dqn_lunarlander.sh
bash runs/s9/qat_ppo_halfcheetah_core1.sh
bash runs/s10/mismatch_lag0.sh 0
bash runs/s10/mismatch_lag0.sh 1
bash runs/s9/ddpg_lunarlander_continuous.sh int8 0
