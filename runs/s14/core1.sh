#!/bin/bash
# Session s14 plan for core 1: walker_stand seed 1, then PPO MinAtar Seaquest seed 0 (#26's Table 2 row).
cd /work/main
bash runs/s14/walker.sh 1 > runs/s14/walker1.log 2>&1
bash runs/s13/ppo_minatar.sh seaquest 0 > runs/s14/seaquest0.log 2>&1
