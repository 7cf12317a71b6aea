#!/bin/bash
# #26: DDPG LunarLanderContinuous QAT, second seed: fp32, then 4 and 5 bits (the knee of seed 0).
# ~35-45 min per run on the Xeon; rerun to resume (within a machine's life: run dirs are not kept across machines).
cd /work/main
mkdir -p /root/actorq_runs/qat_ddpg_lunarlander_continuous
ln -sfn /root/actorq_runs/qat_ddpg_lunarlander_continuous runs/qat_ddpg_lunarlander_continuous
python -m experiments.qat_sweep --config=configs/ddpg_actorq.py:lunarlander_continuous --bits=4,5 --seeds=1 \
    --out_dir=runs/qat_ddpg_lunarlander_continuous
