#!/bin/bash
# #25/#26: Table 2's DQN rows again with the default int8 (the recipe's fp32 action-value head);
# every other row kept as measured.
cd /work/main
python -m experiments.table2 --out_dir=runs/table2 \
  --rows=a2c:cartpole,dqn:cartpole,ppo:cartpole,ddpg:mountaincar_continuous,a2c:mountaincar,dqn:mountaincar,ppo:mountaincar,ppo:halfcheetah,a2c:halfcheetah,ddpg:halfcheetah,a2c:walker2d,ppo:walker2d,a2c:bipedalwalker,ppo:bipedalwalker,dqn:minatar_breakout,ppo:minatar_breakout,dqn:pong,ppo:pong \
  --keep=docs/results/table2/table2.json \
  --reuse=dqn:cartpole=runs/recipe_head_ptq/dqn_cartpole/fp32_seed0,dqn:mountaincar=runs/recipe_head_mountaincar/int8_seed8 \
  --episodes=20
python -m experiments.table2 --out_dir=runs/table2_all --keep=runs/table2/table2.json --episodes=20
