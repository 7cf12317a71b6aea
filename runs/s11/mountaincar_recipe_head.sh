#!/bin/bash
# #25: DQN MountainCar (mountaincar_small) learning with the int8 recipe's actors, which now keep
# an action-value output layer fp32 (make_policy_quantizer), 12 seeds. Resumable: rerun.
cd /work/main
mkdir -p /root/actorq_runs/recipe_head_mountaincar
ln -sfn /root/actorq_runs/recipe_head_mountaincar runs/recipe_head_mountaincar
exec python -m experiments.learning_check --config=configs/dqn_actorq.py:mountaincar_small --quantizers=int8 \
    --seeds=${1:-0,1,2,3,4,5,6,7,8,9,10,11} --threshold=-110 --out_dir=runs/recipe_head_mountaincar
