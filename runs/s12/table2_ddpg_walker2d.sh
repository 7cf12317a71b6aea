#!/bin/bash
# #26: Table 2's DDPG Walker2d row, from the learner's fp32 policy of the int8-actor run of seed 0
# (1M steps, docs/algorithms.md#ddpg-walker2d), over 100 episodes (its returns swing by ~850 between
# episodes, so 20 would leave a standard error of ~24%); every other row kept as measured.
cd /work/main
python -m experiments.table2 --out_dir=runs/table2 \
  --rows=a2c:cartpole,dqn:cartpole,ppo:cartpole,ddpg:mountaincar_continuous,a2c:mountaincar,dqn:mountaincar,ppo:mountaincar,ppo:halfcheetah,a2c:halfcheetah,ddpg:halfcheetah,a2c:walker2d,ppo:walker2d,ddpg:walker2d,a2c:bipedalwalker,ppo:bipedalwalker,dqn:minatar_breakout,ppo:minatar_breakout,dqn:pong,ppo:pong \
  --keep=docs/results/table2/table2.json \
  --reuse=ddpg:walker2d=runs/ddpg_walker2d/seed0/int8_seed0 \
  --episodes=100
python -m experiments.table2 --out_dir=runs/table2_all --keep=runs/table2/table2.json --episodes=20
