#!/bin/bash
# #26/#25: Table 2's DDPG Walker2d row from the learner's fp32 policy at 1M steps of the int8-actor run with
# learning-rate decay (runs/s31/ddpg_walker2d_decay.sh 0; 1832 over its last 5 evaluations, against the
# preset seed 0 policy's 958 that the row had), on 100 episodes; every other row kept as measured (or pending).
cd /work/main
python -m experiments.table2 --out_dir=runs/table2_s31_ddpg_walker2d --keep=docs/results/table2/table2.json \
  --reuse=ddpg:walker2d=runs/ddpg_walker2d/lr_decay/int8_seed0 --episodes=100
