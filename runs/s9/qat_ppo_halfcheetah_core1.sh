#!/bin/bash
# #26 QAT MuJoCo row, core 1: PPO HalfCheetah seed 1 at 6, 5, 4 bits (+ fp32), then seed 0 at 5 and 3 bits
# (after core 0 has finished fp32_seed0, which both seed-0 commands share). Resumable with the same command.
cd /work/main
python -m experiments.qat_sweep --config=configs/ppo_actorq.py:halfcheetah --bits=6,5,4 --seeds=1 \
    --out_dir=runs/qat/ppo_halfcheetah || exit 1
while [ ! -f runs/qat/ppo_halfcheetah/fp32_seed0/summary.json ]; do sleep 30; done
exec python -m experiments.qat_sweep --config=configs/ppo_actorq.py:halfcheetah --bits=5,3 --seeds=0 \
    --out_dir=runs/qat/ppo_halfcheetah
