#!/bin/bash
# #26: Table 2's DDPG BipedalWalker row, on 100 episodes (walkers that fall in some episodes spread wide),
# from the learner's fp32 policy at 1M steps of the int8-actor run with learning-rate decay and a 1M replay
# (runs/s29/ddpg_bipedalwalker_decay.sh 0); every other row kept as measured (or pending).
cd /work/main
python -m experiments.table2 --out_dir=runs/table2_s31_ddpg_bipedalwalker --keep=docs/results/table2/table2.json \
  --reuse=ddpg:bipedalwalker=runs/ddpg_bipedalwalker/lr_decay_1m_replay/int8_seed0 --episodes=100
