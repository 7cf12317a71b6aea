#!/bin/bash
# #23: DDPG HalfCheetah seed 2, int8 actors then fp32 actors: is int8's 10.8% gap on seed 1 systematic or the
# seed's trajectory (A2C HalfCheetah's gap turned out to be the latter over 7 seeds)? ~1 h per run; rerun to resume.
cd /work/main
mkdir -p /root/actorq_runs/ddpg_halfcheetah_seed2
python -m experiments.learning_check --config=configs/ddpg_actorq.py:halfcheetah --quantizers=int8 --seeds=2 \
    --threshold=8000 --out_dir=/root/actorq_runs/ddpg_halfcheetah_seed2/int8
python -m experiments.learning_check --config=configs/ddpg_actorq.py:halfcheetah --quantizers=fp32 --seeds=2 \
    --threshold=8000 --out_dir=/root/actorq_runs/ddpg_halfcheetah_seed2/fp32
