#!/bin/bash
# #25: LunarLander PTQ at 100 episodes (20 leave a standard error of ~18 on returns of std ~80).
cd /work/main
for seed in 0 1; do
  python -m experiments.ptq_study --run_dir=runs/recipe_head_ptq/dqn_lunarlander/fp32_seed$seed \
      --episodes=100 --quantizers=fp32,fp16,rtn_int8,int8,affine_int8 \
      --out_dir=runs/recipe_head_ptq/ptq/dqn_lunarlander_seed${seed}_100ep
done
