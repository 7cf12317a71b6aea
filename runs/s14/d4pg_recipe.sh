#!/bin/bash
# #25 (Milan): D4PG <task>_cpu with the default int8 recipe actors for the recipe's PTQ on every learned
# DMC task. $1 = task, $2 = seed, $3 = the paper's target. Then PTQ of its final policy (20 episodes):
# the recipe beside fp32, fp16, round-to-nearest, the paper's affine int8 and fp32in_int8.
# Resumable: rerun the same command.
cd /work/main
out=runs/recipe_learning_d4pg_$1
mkdir -p /root/actorq_runs/recipe_learning_d4pg_$1 && ln -sfn /root/actorq_runs/recipe_learning_d4pg_$1 $out
python -m experiments.learning_check --config=configs/d4pg_actorq.py:$1_cpu --quantizers=int8 \
    --seeds=$2 --threshold=$3 --out_dir=$out
python -m experiments.ptq_study --run_dir=$out/int8_seed$2 --episodes=20 \
    --quantizers=fp32,fp16,rtn_int8,int8,affine_int8,fp32in_int8 \
    --out_dir=docs/results/ptq_recipe/d4pg_$1_seed$2_milan
