#!/bin/bash
# #25: fp32-actor DQN policies (2 seeds each) on CartPole, Acrobot and LunarLander, then PTQ of
# each with the default int8 (the recipe with the fp32 action-value head) beside fp32, fp16,
# round-to-nearest int8 and the paper's affine int8. Resumable: rerun (finished runs are reused).
cd /work/main
mkdir -p /root/actorq_runs/recipe_head_ptq && ln -sfn /root/actorq_runs/recipe_head_ptq runs/recipe_head_ptq
declare -A THRESHOLD=([cartpole_small]=475 [acrobot_small]=-100 [lunarlander_small]=200)
for preset in cartpole_small acrobot_small lunarlander_small; do
  task=${preset%_small}
  python -m experiments.learning_check --config=configs/dqn_actorq.py:$preset --quantizers=fp32 \
      --seeds=0,1 --threshold=${THRESHOLD[$preset]} --out_dir=runs/recipe_head_ptq/dqn_$task
done
for task in cartpole acrobot lunarlander; do
  episodes=20; [ $task = acrobot ] && episodes=100
  for seed in 0 1; do
    python -m experiments.ptq_study --run_dir=runs/recipe_head_ptq/dqn_$task/fp32_seed$seed \
        --episodes=$episodes --quantizers=fp32,fp16,rtn_int8,int8,affine_int8 \
        --out_dir=runs/recipe_head_ptq/ptq/dqn_${task}_seed$seed
  done
done
