#!/bin/bash
# #26: DDPG LunarLanderContinuous QAT, second seed (fp32, then 4 and 5 bits: the widths around the knee of seed 0).
# ~30-45 min per run on the Xeon; rerun to resume.
cd /work/main
python -m experiments.qat_sweep --config=configs/ddpg_actorq.py:lunarlander_continuous --bits=4,5 --seeds=1 \
    --out_dir=runs/qat_ddpg_lunarlander_continuous
