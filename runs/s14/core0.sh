#!/bin/bash
# Session s14 plan for core 0: walker_stand seed 0, then PPO MinAtar Asterix seed 0 (#24).
cd /work/main
bash runs/s14/walker.sh 0 > runs/s14/walker0.log 2>&1
bash runs/s13/ppo_minatar.sh asterix 0 > runs/s14/asterix0.log 2>&1
