#!/bin/bash
# #25 (Milan, 2026-12-05): hopper_stand seed 0, where smoothing moves the actions 3x farther (0.275 vs 0.089):
# does it cost return? The recipe and its ablations at 100 episodes.
cd /work/main
python -m experiments.ptq_study --run_dir=runs/recipe_learning_d4pg_hopper_stand/int8_seed0 --episodes=100 \
    --quantizers=fp32,int8,rtn_int8,nosmooth_int8,fp32in_int8 \
    --out_dir=docs/results/ptq_recipe/d4pg_hopper_stand_seed0_100ep_milan
