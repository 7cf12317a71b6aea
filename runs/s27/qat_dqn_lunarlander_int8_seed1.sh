#!/bin/bash
# #26 QAT, DQN LunarLander: 8 bits on a second seed, with its fp32 run on the same machine. The
# sweep's seed-matched statistic puts seed 0's 8-bit run 7.4% below its own fp32 (218.0 vs 235.4),
# where the all-seed fp32 mean had it above; this decides whether any width is within 5%.
# ~5-10 min per run; finished runs are reused, so rerunning resumes.
cd /work/main
python -m experiments.qat_sweep --config=configs/dqn_actorq.py:lunarlander_small --bits=8 --seeds=1 \
    --out_dir=runs/qat/dqn_lunarlander_s27 --keep_records=docs/results/qat_dqn_lunarlander/seed1_int8
