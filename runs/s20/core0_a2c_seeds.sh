#!/bin/bash
# #23: A2C HalfCheetah at lag 0, fp32 and int8 actors on seeds 3-6 beside seeds 0-2, to tell whether int8 actors
# cost A2C its learning or the spread is the task's (the bisect of session 20 found no logic change, only
# calibration and float rounding moving the trajectories). ~4-5.5 min per run on the Xeon.
cd /work/main
mkdir -p /root/actorq_runs/a2c_halfcheetah_lag0 && ln -sfn /root/actorq_runs/a2c_halfcheetah_lag0 runs/a2c_halfcheetah_lag0
python -m experiments.learning_check --config=configs/a2c_actorq.py:halfcheetah --config.learner.gsde=False --quantizers=fp32,int8 \
    --seeds=3,4,5,6 --threshold=2000 --out_dir=runs/a2c_halfcheetah_lag0/seeds3456
