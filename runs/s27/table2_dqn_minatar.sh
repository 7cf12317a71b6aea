#!/bin/bash
# #26: Table 2's DQN MinAtar Breakout row, on 100 episodes (20 gave std 12-15 around means near 20, so a
# 14% int8 gap was within noise), from the learner's fp32 policy of the finished 5M-step int8-actor run of
# runs/s26/dqn_minatar.sh breakout 0; every other row kept as measured (or pending).
cd /work/main
python -m experiments.table2 --out_dir=runs/table2_s27_dqn_minatar --keep=docs/results/table2/table2.json \
  --reuse=dqn:minatar_breakout=runs/dqn_minatar_breakout/int8_seed0 --episodes=100
