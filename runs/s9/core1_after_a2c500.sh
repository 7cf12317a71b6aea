#!/bin/bash
# Core 1 after the A2C LunarLander 500k check: DQN LunarLander with int8 (recipe) actors beside the fp32 run.
cd /work/main
while pgrep -f "a2c_lunarlander_500k.sh" | grep -v $$ > /dev/null; do sleep 20; done
exec python -m experiments.learning_check --config=configs/dqn_actorq.py:lunarlander_small --quantizers=fp32,int8 \
    --seeds=0 --threshold=150 --out_dir=runs/dqn_lunarlander/seed0
