#!/bin/bash
# #23/#26: DDPG BipedalWalker with a layer-normalized critic (OpenAI Baselines' DDPG, QuaRL's source,
# normalizes its layers; here the critic only, so the deployed policy stays a dense stack), on the
# preset (DI-engine's Adam 3e-4, discount 0.99, 300k replay, reward floor -10). The preset without
# it swung between walking and falling and ended at -62.2 (docs/algorithms.md#ddpg-bipedalwalker).
# $1 = seed. ~2 h per run on one core; rerun the same command to resume.
cd /work/main
mkdir -p /root/actorq_runs/ddpg_bipedalwalker && ln -sfn /root/actorq_runs/ddpg_bipedalwalker runs/ddpg_bipedalwalker
python -m experiments.learning_check --config=configs/ddpg_actorq.py:bipedalwalker \
    --config.learner.critic_layer_norm=True --quantizers=int8 --seeds=$1 --threshold=100 \
    --out_dir=runs/ddpg_bipedalwalker/critic_ln \
    --keep_records=docs/results/learning_ddpg_bipedalwalker/critic_ln
