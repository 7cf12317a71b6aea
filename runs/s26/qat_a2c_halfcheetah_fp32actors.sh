#!/bin/bash
# #26 QAT bit sweep (Fig. 10), A2C HalfCheetah with gSDE, under QuaRL's protocol: the actors run
# the learner's fp32 policy until the QAT delay (half the learner steps) and int<b> after it
# (--config.qat_actors=fp32). The fp32 baseline is the one of runs/s25/qat_a2c_halfcheetah_gsde.sh
# (without QAT the switch does nothing), copied in. $1 = bits (e.g. 8,6,5,4,3,2), $2 = seeds.
# ~8-12 min per run on one Genoa core; finished runs are reused, so rerunning resumes the sweep.
cd /work/main
out=/root/actorq_runs/qat_a2c_halfcheetah_fp32actors
mkdir -p $out && ln -sfn $out runs/qat_a2c_halfcheetah_fp32actors
for s in ${2//,/ }; do
  base=/root/actorq_runs/qat_a2c_halfcheetah_gsde/fp32_seed$s
  [ -d $out/fp32_seed$s ] || { [ -d $base ] && cp -r $base $out/fp32_seed$s; }
done
python -m experiments.qat_sweep --config=configs/a2c_actorq.py:halfcheetah --config.learner.gsde=True \
    --config.qat_actors=fp32 --bits=$1 --seeds=$2 --out_dir=runs/qat_a2c_halfcheetah_fp32actors \
    --keep_records=docs/results/qat_a2c_halfcheetah/fp32_actors
