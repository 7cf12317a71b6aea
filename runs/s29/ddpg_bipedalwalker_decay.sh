#!/bin/bash
# #23: DDPG BipedalWalker on the preset (DI-engine's Adam 3e-4, discount 0.99, reward floor -10) with
# both learning rates decayed linearly to 0 over the 1M-step budget and a 1M replay (so falls stay in
# it). The preset alone swung between walking and falling and ended at -62.2; a layer-normalized
# critic never reached 100 (docs/algorithms.md#ddpg-bipedalwalker). $1 = seed. ~2-3 h per run on one
# core; rerun the same command to resume (learning_check resumes a stopped run).
cd /work/main
case "$1" in [0-9]*) ;; *) echo "error: usage: ddpg_bipedalwalker_decay.sh <seed>" >&2; exit 2 ;; esac
mkdir -p /root/actorq_runs/ddpg_bipedalwalker && ln -sfn /root/actorq_runs/ddpg_bipedalwalker runs/ddpg_bipedalwalker
python -m experiments.learning_check --config=configs/ddpg_actorq.py:bipedalwalker \
    --config.learner.learning_rate_decay_steps=1000000 --config.replay.max_size=1000000 \
    --quantizers=int8 --seeds=$1 --threshold=100 \
    --out_dir=runs/ddpg_bipedalwalker/lr_decay_1m_replay \
    --keep_records=docs/results/learning_ddpg_bipedalwalker/lr_decay_1m_replay
