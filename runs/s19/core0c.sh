#!/bin/bash
# Core 0 after core0b.sh: #23 A2C HalfCheetah int8 (recipe, recalibrating) actors, seed 0, lag 0, beside the fp32
# run of the same seed. Stop with SIGTERM; rerun to resume.
cd /work/main
mkdir -p /root/actorq_runs/a2c_halfcheetah_lag0 && ln -sfn /root/actorq_runs/a2c_halfcheetah_lag0 runs/a2c_halfcheetah_lag0
python -m experiments.learning_check --config=configs/a2c_actorq.py:halfcheetah --config.learner.gsde=False --quantizers=int8 --seeds=0 \
    --threshold=2000 --out_dir=runs/a2c_halfcheetah_lag0/recipe_seed0
