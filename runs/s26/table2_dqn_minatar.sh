#!/bin/bash
# #26: Table 2's DQN MinAtar Breakout row from the learner's fp32 policy of the int8-actor run of
# runs/s26/dqn_minatar.sh breakout 0 (5M steps; run it to the end first: a reused run is measured at its newest checkpoint, finished or not);
# every other row kept as measured (or pending).
cd /work/main
python -m experiments.table2 --out_dir=runs/table2_s26_dqn_minatar --keep=docs/results/table2/table2.json \
  --reuse=dqn:minatar_breakout=runs/dqn_minatar_breakout/int8_seed0 --episodes=20
