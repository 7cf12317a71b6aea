#!/bin/bash
# #25 (Milan): SAC cartpole_balance_small (50k env steps, as the low-precision study) with the default int8
# recipe actors, 2 seeds, then PTQ of each final policy (20 episodes). Resumable: rerun the same command.
cd /work/main
out=runs/recipe_learning_sac_cartpole_balance
mkdir -p /root/actorq_runs/recipe_learning_sac_cartpole_balance && ln -sfn /root/actorq_runs/recipe_learning_sac_cartpole_balance $out
python -m experiments.learning_check --config=configs/sac_actorq.py:cartpole_balance_small --quantizers=int8 \
    --config.max_actor_steps=50000 --seeds=0,1 --threshold=900 --out_dir=$out
for seed in 0 1; do
  python -m experiments.ptq_study --run_dir=$out/int8_seed$seed --episodes=20 \
      --quantizers=fp32,fp16,rtn_int8,int8,affine_int8,fp32in_int8 \
      --out_dir=docs/results/ptq_recipe/sac_cartpole_balance_seed${seed}_milan
done
