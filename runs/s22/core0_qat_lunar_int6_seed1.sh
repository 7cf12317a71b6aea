#!/bin/bash
# #26: DDPG LunarLanderContinuous QAT, 6 bits on seed 1 (after core0_qat_lunar_seed1.sh; fp32_seed1 is reused).
cd /work/main
python -m experiments.qat_sweep --config=configs/ddpg_actorq.py:lunarlander_continuous --bits=6 --seeds=1 \
    --out_dir=runs/qat_ddpg_lunarlander_continuous
