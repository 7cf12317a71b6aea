#!/bin/bash
# Core 1 (#23, Xeon L3 480 MiB, 2026-12-06): DDPG BipedalWalker seed 0, int8 actors, 1M steps, with the
# preset now on DI-engine's settings (Adam 3e-4, discount 0.99, 300k replay, reward floor -10) after the
# Zoo-lr seed 0 (runs/ddpg_bipedalwalker/seed0) ended at -67.6; recipe recalibrated at each doubling of the inserts. Stop with SIGTERM; rerun to resume.
cd /work/main
mkdir -p /root/actorq_runs/ddpg_bipedalwalker && ln -sfn /root/actorq_runs/ddpg_bipedalwalker runs/ddpg_bipedalwalker
python -m experiments.learning_check --config=configs/ddpg_actorq.py:bipedalwalker --quantizers=int8 --seeds=0 \
    --threshold=100 --out_dir=runs/ddpg_bipedalwalker/dieng_seed0
