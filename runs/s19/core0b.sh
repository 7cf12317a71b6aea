#!/bin/bash
# Core 0 after PPO MinAtar Asterix seed 1 (Xeon L3 480 MiB, 2026-12-06 session 2): #23 A2C HalfCheetah with fp32
# actors, seed 0, at policy lag 0 (the int8 lag-0 run of seed 0 ended at 1672.7): does A2C itself fail this seed?
# Stop with SIGTERM; rerun to resume.
cd /work/main
mkdir -p /root/actorq_runs/a2c_halfcheetah_lag0 && ln -sfn /root/actorq_runs/a2c_halfcheetah_lag0 runs/a2c_halfcheetah_lag0
python -m experiments.learning_check --config=configs/a2c_actorq.py:halfcheetah --config.learner.gsde=False --quantizers=fp32 --seeds=0 \
    --threshold=2000 --out_dir=runs/a2c_halfcheetah_lag0/fp32_seed0
