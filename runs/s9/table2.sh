#!/bin/bash
# Table 2 with the discrete MountainCar rows (A2C, DQN, PPO; measured now) and every earlier row kept from
# docs/results/table2/table2.json (measured there, not again).
cd /work/main
exec python -m experiments.table2 --out_dir=runs/table2 \
  --rows=a2c:cartpole,dqn:cartpole,ppo:cartpole,ddpg:mountaincar_continuous,a2c:mountaincar,dqn:mountaincar,ppo:mountaincar,ppo:halfcheetah,a2c:halfcheetah,ddpg:halfcheetah,a2c:walker2d,ppo:walker2d,a2c:bipedalwalker,ppo:bipedalwalker,dqn:minatar_breakout,ppo:minatar_breakout,dqn:pong,ppo:pong \
  --keep=docs/results/table2/table2.json \
  --reuse=a2c:mountaincar=runs/a2c_mountaincar/seed0/int8_seed0,dqn:mountaincar=runs/recipe/dqn_mountaincar_int8/int8_seed6,ppo:mountaincar=runs/ppo_mountaincar/seed0/int8_seed0$1 \
  --episodes=20
