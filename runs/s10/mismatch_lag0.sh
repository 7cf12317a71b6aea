#!/bin/bash
# #23 mismatch comparison redone at policy lag 0 with calibrated int8 (recipe) actors: PPO HalfCheetah, 500k env
# steps, the two options that the lag-2 comparison chose between. $1 = seed. Resumable with the same command.
cd /work/main
for opt in actor:none learner:truncated; do
  python -m experiments.learning_check --config=configs/ppo_actorq.py:halfcheetah --quantizers=int8 --seeds=$1 \
    --threshold=3000 --out_dir=runs/ppo_halfcheetah_mismatch_lag0/${opt/:/_} --config.max_actor_steps=500000 \
    --config.learner.behavior_logprob=${opt%:*} --config.learner.is_correction=${opt#*:} || exit 1
done
