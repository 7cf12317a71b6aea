#!/bin/bash
# #26 Table 2 discrete MountainCar rows: A2C and PPO at the Zoo's MountainCar-v0 settings (1M steps, int8 actors,
# seed 0; Zoo references -111.3 and -110.4). Resumable with the same command.
cd /work/main
for algo in a2c ppo; do
  python -m experiments.learning_check --config=configs/${algo}_actorq.py:mountaincar --quantizers=int8 --seeds=0 \
      --threshold=-110 --out_dir=runs/${algo}_mountaincar/seed0 || exit 1
done
