#!/bin/bash
# Core 0 (#23): DDPG HalfCheetah with fp32 actors, seed 0 (the int8-vs-fp32 comparison;
# int8 seeds 0/1 are in docs/algorithms.md), then DDPG BipedalWalker seed 0 (int8 actors; resumes).
# Run dirs live under /root/actorq_runs (runs/ddpg_<task> links there), so a machine handed back
# as it was resumes them; on a new machine they start over. Rerun this script to continue: a
# finished run is only reused.
cd /work/main
mkdir -p /root/actorq_runs/ddpg_halfcheetah && ln -sfn /root/actorq_runs/ddpg_halfcheetah runs/ddpg_halfcheetah
python -m experiments.learning_check --config=configs/ddpg_actorq.py:halfcheetah --quantizers=fp32 --seeds=0 \
    --threshold=8000 --out_dir=runs/ddpg_halfcheetah/seed0
bash runs/s11/ddpg_row.sh bipedalwalker 0 100
