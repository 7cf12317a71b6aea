#!/bin/bash
# #23 DDPG rows (int8 actors, 1M steps): $1 = task (walker2d | bipedalwalker), $2 = seed, $3 = threshold.
# Run dirs live under /root/actorq_runs (outside the work tree, so a re-laid checkout keeps them);
# runs/ddpg_<task> is a link to it. Resumable: rerun the same command.
cd /work/main
mkdir -p /root/actorq_runs/ddpg_$1 && ln -sfn /root/actorq_runs/ddpg_$1 runs/ddpg_$1
python -m experiments.learning_check --config=configs/ddpg_actorq.py:$1 --quantizers=int8 --seeds=$2 \
    --threshold=$3 --out_dir=runs/ddpg_$1/seed$2
