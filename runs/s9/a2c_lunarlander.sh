#!/bin/bash
# A2C LunarLander (the Zoo's settings): a Box2D task for A2C's QAT row. $1 = quantizer (fp32|int8), $2 = seed.
cd /work/main
exec python -m experiments.learning_check --config=configs/a2c_actorq.py:lunarlander --quantizers=$1 --seeds=$2 \
    --threshold=150 --out_dir=runs/a2c_lunarlander/seed$2
