#!/bin/bash
# Core 0 (#23, Milan, 2026-12-05): DDPG HalfCheetah with fp32 actors, seed 0 (the issue's int8-vs-fp32
# comparison; int8 seeds 0/1 are in docs/algorithms.md). Run dirs live under /root/actorq_runs
# (runs/ddpg_<task> links there). Stop with SIGTERM; rerun this script to resume.
cd /work/main
mkdir -p /root/actorq_runs/ddpg_halfcheetah && ln -sfn /root/actorq_runs/ddpg_halfcheetah runs/ddpg_halfcheetah
python -m experiments.learning_check --config=configs/ddpg_actorq.py:halfcheetah --quantizers=fp32 --seeds=0 \
    --threshold=8000 --out_dir=runs/ddpg_halfcheetah/seed0
