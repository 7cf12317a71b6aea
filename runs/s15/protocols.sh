#!/bin/bash
# #24 (Milan): the four PPO MinAtar seed-0 policies (10M steps, int8 actors) under actorq's evaluation
# protocol (sticky actions 0.1, greedy) and gymnax's (no sticky actions, sampled), 50 episodes each,
# fp32 and the int8 package, beside the gymnax README's PPO returns (Seaquest has none).
cd /work/main
for spec in breakout:28 space_invaders:131 asterix:15 seaquest:; do
  game=${spec%%:*}; ref=${spec##*:}
  python -m experiments.eval_protocols --run_dir=runs/ppo_minatar_$game/seed0 --episodes=50 \
      ${ref:+--reference=$ref} --out_dir=docs/results/protocols_ppo_minatar/$game
done
