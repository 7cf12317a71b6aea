#!/bin/bash
# #26 (Milan): Table 2's PPO MinAtar Seaquest row from the learner's fp32 policy of the int8-actor run
# of runs/s13/ppo_minatar.sh seaquest 0 (10M steps); every other row kept as measured (or pending).
cd /work/main
python -m experiments.table2 --out_dir=runs/table2_s14 --keep=docs/results/table2/table2.json \
  --reuse=ppo:minatar_seaquest=runs/ppo_minatar_seaquest/seed0 --episodes=20
