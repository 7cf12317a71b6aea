#!/bin/bash
# Next session, core 0 (#23): DDPG Walker2d seed 0 (finished 2026-12-04 unless cut off: rerunning
# only reuses it), then DDPG BipedalWalker seed 0, then DDPG HalfCheetah with fp32 actors (seed 0).
# Run dirs live under /root/actorq_runs (runs/ddpg_<task> links there), so a machine handed back
# as it was resumes them; on a new machine they start over. Rerun this script to continue.
cd /work/main
bash runs/s11/ddpg_row.sh walker2d 0 1250
bash runs/s11/ddpg_row.sh bipedalwalker 0 100
mkdir -p /root/actorq_runs/ddpg_halfcheetah && ln -sfn /root/actorq_runs/ddpg_halfcheetah runs/ddpg_halfcheetah
python -m experiments.learning_check --config=configs/ddpg_actorq.py:halfcheetah --quantizers=fp32 --seeds=0 \
    --threshold=8000 --out_dir=runs/ddpg_halfcheetah/fp32
