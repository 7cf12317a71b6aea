#!/bin/bash
# Core 0 (Xeon L3 480 MiB, 2026-12-06 session 2): #24 PPO MinAtar Asterix, seed 1, int8 actors (the second seed
# the 2-seed target needs). Stop with SIGTERM; rerun to resume.
cd /work/main
bash runs/s13/ppo_minatar.sh asterix 1
