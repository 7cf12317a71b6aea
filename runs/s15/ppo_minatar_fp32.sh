#!/bin/bash
# #24 (Milan): PPO on MinAtar with fp32 actors, beside the int8-actor runs of runs/s13/ppo_minatar.sh (same
# preset, 10M steps). $1 = game, $2 = seed. Stop with SIGTERM; rerun the same command to resume.
cd /work/main
run=runs/ppo_minatar_$1/fp32_seed$2
mkdir -p /root/actorq_runs/ppo_minatar_$1 && ln -sfn /root/actorq_runs/ppo_minatar_$1 runs/ppo_minatar_$1
resume=""; [ -f $run/config.json ] && resume=--resume
python -m experiments.ppo_actorq --config=configs/ppo_actorq.py:minatar_$1 --config.seed=$2 \
    --config.quantizer=fp32 --config.run_dir=$run --config.eval_every_steps=50000 $resume
