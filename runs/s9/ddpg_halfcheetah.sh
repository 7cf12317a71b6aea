#!/bin/bash
# #23 DDPG HalfCheetah (CleanRL settings, int8 actors): $1 = seed. Resumable with the same command.
cd /work/main
while pgrep -f "mountaincar_onpolicy.sh" > /dev/null; do sleep 20; done
exec python -m experiments.learning_check --config=configs/ddpg_actorq.py:halfcheetah --quantizers=int8 --seeds=$1 \
    --threshold=8000 --out_dir=runs/ddpg_halfcheetah/seed$1
