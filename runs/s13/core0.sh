#!/bin/bash
# #25 (Milan, AVX2): D4PG cheetah_run_cpu with the default int8 recipe actors, seed 2 (seeds 0 and 1
# are in docs/ptq.md: 810.6 on Milan, 731.5 on the Xeon). Resumable: rerun the same command.
cd /work/main
mkdir -p /root/actorq_runs/recipe_learning_d4pg_cheetah_run
ln -sfn /root/actorq_runs/recipe_learning_d4pg_cheetah_run runs/recipe_learning_d4pg_cheetah_run
python -m experiments.learning_check --config=configs/d4pg_actorq.py:cheetah_run_cpu --quantizers=int8 \
    --seeds=2 --threshold=732 --out_dir=runs/recipe_learning_d4pg_cheetah_run
