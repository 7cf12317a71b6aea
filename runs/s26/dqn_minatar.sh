#!/bin/bash
# #24/#26: DQN on MinAtar with int8 actors, the preset's 5M-step schedule (the MinAtar paper's DQN;
# configs/dqn_actorq.py). $1 = game (breakout | space_invaders | asterix | seaquest | freeway),
# $2 = seed, $3 = actor quantizer (default int8). About 3-4 h on one Genoa core, so it spans
# sessions: stop with SIGTERM (a final checkpoint is written) and rerun the same command to resume.
cd /work/main
q=${3:-int8}
run=runs/dqn_minatar_$1/${q}_seed$2
mkdir -p /root/actorq_runs/dqn_minatar_$1 && ln -sfn /root/actorq_runs/dqn_minatar_$1 runs/dqn_minatar_$1
resume=""; [ -f $run/config.json ] && resume=--resume
python -m experiments.dqn_actorq --config=configs/dqn_actorq.py:minatar_$1 --config.seed=$2 \
    --config.quantizer=$q --config.run_dir=$run $resume
