#!/bin/bash
# #26: A2C HalfCheetah QAT (Fig. 10's MuJoCo row): 8..2 bits on seed 0, then 4-6 bits on seeds 1 and 2
# (fp32 baselines included: 15 runs, ~4-6 min each on the Xeon). Then DDPG LunarLanderContinuous 6 bits on
# seed 1, once core 0's script has finished fp32_seed1 (so the two never run the same run dir).
cd /work/main
mkdir -p /root/actorq_runs/qat_a2c_halfcheetah
ln -sfn /root/actorq_runs/qat_a2c_halfcheetah runs/qat_a2c_halfcheetah
python -m experiments.qat_sweep --config=configs/a2c_actorq.py:halfcheetah --config.learner.gsde=False --bits=8,6,5,4,3,2 --seeds=0 \
    --out_dir=runs/qat_a2c_halfcheetah || exit 1
python -m experiments.qat_sweep --config=configs/a2c_actorq.py:halfcheetah --config.learner.gsde=False --bits=4,5,6 --seeds=1,2 \
    --out_dir=runs/qat_a2c_halfcheetah || exit 1
until [ -d runs/qat_ddpg_lunarlander_continuous/int4_qat_seed1 ]; do sleep 30; done
python -m experiments.qat_sweep --config=configs/ddpg_actorq.py:lunarlander_continuous --bits=6 --seeds=1 \
    --out_dir=runs/qat_ddpg_lunarlander_continuous
