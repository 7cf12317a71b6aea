#!/bin/bash
# #24 (Milan, 2026-12-05): the fp32-actor PPO MinAtar Asterix policy (seed 0, 10M steps) under both evaluation
# protocols, 50 episodes, as runs/s15/protocols.sh did for the int8-actor run: final policies compared with
# standard errors, not 10-episode evaluations.
cd /work/main
python -m experiments.eval_protocols --run_dir=runs/ppo_minatar_asterix/fp32_seed0 --episodes=50 --reference=15 \
    --out_dir=docs/results/protocols_ppo_minatar/asterix_fp32_actors
