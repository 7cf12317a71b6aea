#!/bin/bash
# DQN LunarLander (the Zoo's settings): a Box2D task for DQN's QAT row. $1 = quantizer (fp32|int8), $2 = seed.
cd /work/main
exec python -m experiments.learning_check --config=configs/dqn_actorq.py:lunarlander_small --quantizers=$1 --seeds=$2 \
    --threshold=150 --out_dir=runs/dqn_lunarlander/seed$2
