#!/bin/bash
# #26: A2C HalfCheetah QAT at 4 bits with PPO's mismatch setting (learner log-probabilities, truncated IS):
# do the seeds that collapsed with A2C's default (actor log-probabilities, no truncation) learn? Usage: $0 <seed>
cd /work/main
python -m experiments.qat_sweep --config=configs/a2c_actorq.py:halfcheetah --config.learner.gsde=False --bits=4 --seeds=$1 \
    --config.learner.behavior_logprob=learner --config.learner.is_correction=truncated \
    --out_dir=runs/qat_a2c_halfcheetah_truncated/seed$1
