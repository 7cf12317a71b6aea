#!/bin/bash
# #25 (Milan): PTQ of the D4PG walker_stand_cpu policies of runs/s14/walker.sh (seeds 0 and 1, int8
# recipe actors, 150k steps): the recipe beside fp32, fp16, round-to-nearest, the paper's affine int8
# and fp32in_int8, 20 episodes each. Then the 2-seed learning report.
cd /work/main
for seed in 0 1; do
  python -m experiments.ptq_study --run_dir=runs/recipe_learning_d4pg_walker_stand/int8_seed$seed --episodes=20 \
      --quantizers=fp32,fp16,rtn_int8,int8,affine_int8,fp32in_int8 \
      --out_dir=docs/results/ptq_recipe/d4pg_walker_stand_seed${seed}_milan
done
python -m experiments.learning_check --config=configs/d4pg_actorq.py:walker_stand_cpu --quantizers=int8 \
    --config.max_actor_steps=150000 --seeds=0,1 --threshold=948 --out_dir=runs/recipe_learning_d4pg_walker_stand
