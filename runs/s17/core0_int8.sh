#!/bin/bash
# Core 0 (#23, Xeon, 2026-12-05): DDPG HalfCheetah seed 1 with int8 actors again, on the machine and code
# that just ran fp32 actors on seed 1 (11784.1 over the last 5, against the 2026-12-03 int8 run's 9122.7):
# the same seed, machine and code, so that the pair differs only in the actors' precision.
# Stop with SIGTERM; rerun this script to resume.
cd /work/main
mkdir -p /root/actorq_runs/ddpg_halfcheetah && ln -sfn /root/actorq_runs/ddpg_halfcheetah runs/ddpg_halfcheetah
python -m experiments.learning_check --config=configs/ddpg_actorq.py:halfcheetah --quantizers=int8 --seeds=1 \
    --threshold=8000 --out_dir=runs/ddpg_halfcheetah/seed1_xeon2
