#!/bin/bash
# #26 QAT MuJoCo row, core 0: PPO HalfCheetah seed 0, fp32 + QAT at 8, 6, 4, 2 bits. Resumable with the same command.
cd /work/main
exec python -m experiments.qat_sweep --config=configs/ppo_actorq.py:halfcheetah --bits=8,6,4,2 --seeds=0 \
    --out_dir=runs/qat/ppo_halfcheetah
