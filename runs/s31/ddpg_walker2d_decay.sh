#!/bin/bash
# #23: DDPG Walker2d (CleanRL's settings, 1M replay already) with both learning rates decayed linearly to 0
# over the 1M-step budget, the change that made DDPG BipedalWalker seed 0 hold (docs/algorithms.md). Seed 0
# of the preset ended 17.5% short of 1250 (walks, then falls in some episodes). $1 = seed. ~1-1.5 h per run
# on a core of its own; rerun the same command to resume (learning_check resumes a stopped run).
cd /work/main
case "$1" in [0-9]*) ;; *) echo "error: usage: ddpg_walker2d_decay.sh <seed>" >&2; exit 2 ;; esac
mkdir -p /root/actorq_runs/ddpg_walker2d && ln -sfn /root/actorq_runs/ddpg_walker2d runs/ddpg_walker2d
python -m experiments.learning_check --config=configs/ddpg_actorq.py:walker2d \
    --config.learner.learning_rate_decay_steps=1000000 \
    --quantizers=int8 --seeds=$1 --threshold=1250 \
    --out_dir=runs/ddpg_walker2d/lr_decay \
    --keep_records=docs/results/learning_ddpg_walker2d/lr_decay
