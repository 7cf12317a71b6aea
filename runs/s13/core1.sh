#!/bin/bash
# #26 (Milan): PPO MinAtar Breakout with int8 actors, seed 0, the preset's 10M-step schedule,
# stopped with SIGTERM when the session's core time ends (about 1M steps) and resumed by rerunning
# this script: its policy gives Table 2's first conv-policy row ("trained to N steps").
cd /work/main
run=runs/ppo_minatar_breakout/seed0
mkdir -p /root/actorq_runs/ppo_minatar_breakout && ln -sfn /root/actorq_runs/ppo_minatar_breakout runs/ppo_minatar_breakout
resume=""; [ -f $run/config.json ] && resume=--resume
python -m experiments.ppo_actorq --config=configs/ppo_actorq.py:minatar_breakout \
    --config.run_dir=$run --config.eval_every_steps=50000 $resume
