#!/bin/bash
# Session 10, core 0: finish PPO HalfCheetah QAT seed 0 (int4, int2), then DDPG HalfCheetah seed 0 to 1M.
# Every step resumes from its checkpoints; rerun this script to continue.
cd /work/main
bash runs/s9/qat_ppo_halfcheetah_core0.sh
bash runs/s9/ddpg_halfcheetah.sh 0
bash runs/s10/table2_ddpg.sh > runs/s10/table2_ddpg.log 2>&1
bash runs/s9/ddpg_halfcheetah.sh 1
