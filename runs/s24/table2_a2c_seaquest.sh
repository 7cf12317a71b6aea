#!/bin/bash
# #26 (Genoa): Table 2's A2C MinAtar Seaquest row from the learner's fp32 policy of the int8-actor run of
# runs/s24/a2c_minatar.sh seaquest 0 (10M steps); every other row kept as measured (or pending).
cd /work/main
python -m experiments.table2 --out_dir=runs/table2_s24_seaquest --keep=docs/results/table2/table2.json \
  --reuse=a2c:minatar_seaquest=runs/a2c_minatar_seaquest/seed0 --episodes=20
