#!/bin/bash
# #26 QAT bit sweep (Fig. 10), A2C HalfCheetah with gSDE (the setting that made its int8 actors hold,
# #23), QAT from half the learner steps. $1 = bits (e.g. 8,6,5,4,3,2), $2 = seeds (e.g. 0).
# ~8-12 min per run on one Genoa core; finished runs are reused, so rerunning resumes the sweep.
cd /work/main
mkdir -p /root/actorq_runs/qat_a2c_halfcheetah_gsde && ln -sfn /root/actorq_runs/qat_a2c_halfcheetah_gsde runs/qat_a2c_halfcheetah_gsde
python -m experiments.qat_sweep --config=configs/a2c_actorq.py:halfcheetah --config.learner.gsde=True \
    --bits=$1 --seeds=$2 --out_dir=runs/qat_a2c_halfcheetah_gsde \
    --keep_records=docs/results/qat_a2c_halfcheetah/gsde
