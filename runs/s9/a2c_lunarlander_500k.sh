#!/bin/bash
# A2C LunarLander at 500k steps (the Zoo's 200k preset ended at 73.8 over the last 5 evals): a baseline for QAT?
cd /work/main
exec python -m experiments.learning_check --config=configs/a2c_actorq.py:lunarlander --config.max_actor_steps=500000 \
    --quantizers=fp32 --seeds=0 --threshold=150 --out_dir=runs/a2c_lunarlander_500k/seed0
