#!/bin/bash
# #25: the same-machine baseline for the MountainCar comparison: fp32 actors, seeds 0-11 (after
# mountaincar_recipe_head.sh). Pass fp32head_uact_int8 for the preset's former actors. Resumable.
cd /work/main
while pgrep -f "out_dir=runs/recipe_head_mountaincar$" > /dev/null; do sleep 20; done
mkdir -p /root/actorq_runs/recipe_head_mountaincar
ln -sfn /root/actorq_runs/recipe_head_mountaincar runs/recipe_head_mountaincar
quantizer=${1:-fp32}
exec python -m experiments.learning_check --config=configs/dqn_actorq.py:mountaincar_small --quantizers=$quantizer \
    --seeds=0,1,2,3,4,5,6,7,8,9,10,11 --threshold=-110 --out_dir=runs/recipe_head_mountaincar/$quantizer
