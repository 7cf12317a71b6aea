#!/bin/bash
# #26 QAT Box2D row for DQN: LunarLander (the Zoo's settings, 100k steps), seed 0 at every bit width, then
# seed 1 at 4, 5, 6. Resumable with the same command.
cd /work/main
python -m experiments.qat_sweep --config=configs/dqn_actorq.py:lunarlander_small --bits=8,6,5,4,3,2 --seeds=0 \
    --out_dir=runs/qat/dqn_lunarlander || exit 1
exec python -m experiments.qat_sweep --config=configs/dqn_actorq.py:lunarlander_small --bits=4,5,6 --seeds=1 \
    --out_dir=runs/qat/dqn_lunarlander
