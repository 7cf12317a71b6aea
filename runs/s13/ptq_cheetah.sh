#!/bin/bash
# #25 (Milan): PTQ of the D4PG cheetah_run_cpu policy of runs/s13/core0.sh (seed 2, int8 recipe
# actors): the recipe beside fp32, fp16, round-to-nearest, the paper's affine int8 and fp32in_int8.
cd /work/main
python -m experiments.ptq_study --run_dir=runs/recipe_learning_d4pg_cheetah_run/int8_seed2 --episodes=20 \
    --quantizers=fp32,fp16,rtn_int8,int8,affine_int8,fp32in_int8 \
    --out_dir=docs/results/ptq_recipe/d4pg_cheetah_run_seed2_milan
