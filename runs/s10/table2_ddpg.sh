#!/bin/bash
# Table 2 with the DDPG HalfCheetah row (the learner's fp32 policy of int8-actor seed 0 at 1M steps); every other
# row kept from docs/results/table2/table2.json.
cd /work/main
exec python -m experiments.table2 --out_dir=runs/table2 \
  --rows=a2c:cartpole,dqn:cartpole,ppo:cartpole,ddpg:mountaincar_continuous,a2c:mountaincar,dqn:mountaincar,ppo:mountaincar,ppo:halfcheetah,a2c:halfcheetah,ddpg:halfcheetah,a2c:walker2d,ppo:walker2d,a2c:bipedalwalker,ppo:bipedalwalker,dqn:minatar_breakout,ppo:minatar_breakout,dqn:pong,ppo:pong \
  --keep=docs/results/table2/table2.json \
  --reuse=ddpg:halfcheetah=runs/ddpg_halfcheetah/seed0/int8_seed0 \
  --episodes=20
