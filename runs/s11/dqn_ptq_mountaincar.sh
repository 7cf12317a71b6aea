#!/bin/bash
# #25: PTQ of two fp32-actor DQN MountainCar policies of the Genoa learning check (seeds 4 and 9,
# both holding -110) with the default int8 (fp32 action-value head).
cd /work/main
for seed in 4 9; do
  python -m experiments.ptq_study --run_dir=runs/recipe_head_mountaincar/fp32/fp32_seed$seed \
      --episodes=100 --quantizers=fp32,fp16,rtn_int8,int8,fp32head_uact_int8,affine_int8 \
      --out_dir=runs/recipe_head_ptq/ptq/dqn_mountaincar_seed$seed
done
