#!/bin/bash
# #23/#26: A2C HalfCheetah at lag 0 with PPO's mismatch setting (learner log-probabilities, truncated IS),
# int8 recipe actors and fp32 actors on seeds 0-6. Does the setting bring int8's seed spread (sd 1231 with A2C's
# default, 538 with fp32 actors) back to fp32's, so it can become A2C's default? ~4-6 min per run; rerun to resume.
cd /work/main
mkdir -p /root/actorq_runs/a2c_halfcheetah_truncated && ln -sfn /root/actorq_runs/a2c_halfcheetah_truncated runs/a2c_halfcheetah_truncated
python -m experiments.learning_check --config=configs/a2c_actorq.py:halfcheetah --config.learner.gsde=False --quantizers=int8,fp32 \
    --seeds=0,1,2,3,4,5,6 --threshold=2000 \
    --config.learner.behavior_logprob=learner --config.learner.is_correction=truncated \
    --out_dir=runs/a2c_halfcheetah_truncated/lag0
