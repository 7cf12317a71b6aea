#!/bin/bash
# #26: Table 2's first pixel rows, PPO on MinAtar Breakout and SpaceInvaders, from the learner's fp32
# policy of the int8-actor runs of runs/s13/ppo_minatar.sh (seed 0, 10M steps); every other row
# kept as measured. Then the whole table (kept rows as measured, the rest pending).
cd /work/main
python -m experiments.table2 --out_dir=runs/table2 \
  --rows=a2c:cartpole,dqn:cartpole,ppo:cartpole,ddpg:mountaincar_continuous,a2c:mountaincar,dqn:mountaincar,ppo:mountaincar,ppo:halfcheetah,a2c:halfcheetah,ddpg:halfcheetah,a2c:walker2d,ppo:walker2d,ddpg:walker2d,a2c:bipedalwalker,ppo:bipedalwalker,dqn:minatar_breakout,ppo:minatar_breakout,ppo:minatar_space_invaders,dqn:pong,ppo:pong \
  --keep=docs/results/table2/table2.json \
  --reuse=ppo:minatar_breakout=runs/ppo_minatar_breakout/seed0,ppo:minatar_space_invaders=runs/ppo_minatar_space_invaders/seed0 \
  --episodes=20
python -m experiments.table2 --out_dir=runs/table2_all --keep=runs/table2/table2.json --episodes=20
