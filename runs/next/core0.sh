#!/bin/bash
# Next session, core 0 (#23): DDPG HalfCheetah int8 seed 1 to 1M (resumes), then fp32 actors on seeds 0 and 1.
# Each step resumes from its checkpoints; rerun this script to continue.
cd /work/main
bash runs/s9/ddpg_halfcheetah.sh 1
python -m experiments.learning_check --config=configs/ddpg_actorq.py:halfcheetah --quantizers=fp32 --seeds=0,1 \
    --threshold=8000 --out_dir=runs/ddpg_halfcheetah/fp32
