#!/bin/bash
# #26 (Genoa): Table 2's A2C MinAtar Breakout and SpaceInvaders rows from the learner's fp32 policy of the
# int8-actor runs of runs/s24/a2c_minatar.sh <game> 0 (10M steps); every other row kept as measured (or pending).
cd /work/main
python -m experiments.table2 --out_dir=runs/table2_s24 --keep=docs/results/table2/table2.json \
  --reuse=a2c:minatar_breakout=runs/a2c_minatar_breakout/seed0,a2c:minatar_space_invaders=runs/a2c_minatar_space_invaders/seed0 \
  --episodes=20
