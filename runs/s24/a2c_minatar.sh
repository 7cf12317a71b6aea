#!/bin/bash
# #24/#26 Table 2: A2C on MinAtar with int8 actors, the preset's 10M-step schedule (the Zoo's Atari A2C
# settings with the MinAtar network). $1 = game (breakout | space_invaders | asterix | seaquest | freeway),
# $2 = seed. Stop with SIGTERM (a final checkpoint is written); rerun the same command to resume.
cd /work/main
run=runs/a2c_minatar_$1/seed$2
mkdir -p /root/actorq_runs/a2c_minatar_$1 && ln -sfn /root/actorq_runs/a2c_minatar_$1 runs/a2c_minatar_$1
resume=""; [ -f $run/config.json ] && resume=--resume
python -m experiments.a2c_actorq --config=configs/a2c_actorq.py:minatar_$1 --config.seed=$2 \
    --config.run_dir=$run --config.eval_every_steps=50000 $resume
