#!/bin/bash
# #23: A2C HalfCheetah with gSDE (the RL Zoo's use_sde, the one setting of its tuned A2C preset not
# carried over before), int8 recipe actors at policy lag 0. $1 = quantizers (int8 | fp32 | int8,fp32),
# $2 = seeds (e.g. 0,1). ~10 min per run on one Genoa core; finished runs are reused.
cd /work/main
mkdir -p /root/actorq_runs/a2c_halfcheetah_gsde && ln -sfn /root/actorq_runs/a2c_halfcheetah_gsde runs/a2c_halfcheetah_gsde
python -m experiments.learning_check --config=configs/a2c_actorq.py:halfcheetah --quantizers=$1 \
    --seeds=$2 --threshold=2000 --config.learner.gsde=True \
    --out_dir=runs/a2c_halfcheetah_gsde/lag0 --keep_records=docs/results/learning_a2c_halfcheetah/gsde
