#!/bin/bash
# Session 15, core 0, after D4PG hopper_stand seed 0 and its PTQ: PPO MinAtar Asterix with fp32 actors,
# seed 0 (#24: fp32 actors beside the int8 ones on one game). Replaces the finger_spin seed 1 and
# cheetah_run seed 3 runs that were queued: they would not end within the session.
cd /work/main
while pgrep -f "d4pg_recipe.sh hopper_stand 0" > /dev/null; do sleep 20; done
bash runs/s15/ppo_minatar_fp32.sh asterix 0 > runs/s15/asterix_fp32_0.log 2>&1
