#!/bin/bash
# Core 0 after core0c.sh: #23 A2C HalfCheetah seeds 1 and 2, int8 (recipe) and fp32 actors, lag 0: with seed 0
# (core0b/core0c) a 3-seed comparison of the actors' precision. Stop with SIGTERM; rerun to resume.
cd /work/main
mkdir -p /root/actorq_runs/a2c_halfcheetah_lag0 && ln -sfn /root/actorq_runs/a2c_halfcheetah_lag0 runs/a2c_halfcheetah_lag0
python -m experiments.learning_check --config=configs/a2c_actorq.py:halfcheetah --config.learner.gsde=False --quantizers=int8,fp32 --seeds=1,2 \
    --threshold=2000 --out_dir=runs/a2c_halfcheetah_lag0/seeds12
