#!/bin/bash
# #25 (Milan): D4PG walker_stand_cpu with the default int8 recipe actors, seed $1, stopped at 150k env
# steps (the Milan int8 run of docs/learning.md held 972 from 110k); its policy feeds the recipe's
# PTQ (runs/s14/ptq_walker.sh). Resumable: rerun the same command.
cd /work/main
mkdir -p /root/actorq_runs/recipe_learning_d4pg_walker_stand
ln -sfn /root/actorq_runs/recipe_learning_d4pg_walker_stand runs/recipe_learning_d4pg_walker_stand
python -m experiments.learning_check --config=configs/d4pg_actorq.py:walker_stand_cpu --quantizers=int8 \
    --config.max_actor_steps=150000 --seeds=$1 --threshold=948 --out_dir=runs/recipe_learning_d4pg_walker_stand
