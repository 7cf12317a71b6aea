#!/bin/bash
# Core 0 after core0d.sh: #23/#25 A2C HalfCheetah seed 0, lag 0, two more actor quantizers, to place the recipe's
# loss: rtn_int8 (round-to-nearest, no calibration) on this commit, and int8 at a2e96b3 (the recipe calibrated once,
# before the recalibration of 18fa7b5; needs `git worktree add /tmp/s19/wt a2e96b3`).
cd /work/main
mkdir -p /root/actorq_runs/a2c_halfcheetah_lag0 && ln -sfn /root/actorq_runs/a2c_halfcheetah_lag0 runs/a2c_halfcheetah_lag0
python -m experiments.learning_check --config=configs/a2c_actorq.py:halfcheetah --config.learner.gsde=False --quantizers=rtn_int8 --seeds=0 \
    --threshold=2000 --out_dir=runs/a2c_halfcheetah_lag0/rtn_seed0
[ -d /tmp/s19/wt ] || git worktree add -f /tmp/s19/wt a2e96b3
(cd /tmp/s19/wt && PYTHONPATH=/tmp/s19/wt python -m experiments.learning_check --config=configs/a2c_actorq.py:halfcheetah --config.learner.gsde=False \
    --quantizers=int8 --seeds=0 --threshold=2000 --out_dir=/root/actorq_runs/a2c_halfcheetah_lag0/calibrated_once_seed0)
