#!/bin/bash
# #26 item 6: Björck et al. beyond one task. SAC walker_stand at the preset's 300k env steps, 2 seeds, fp32 / naive
# fp16 / fp16 + the six fixes / bf16 + the fixes / supervised mixed precision (fp16_amp). 100k was too short on
# Genoa (bjorck_walker_stand.sh: fp32 seed 0 ended at 665, below the published 939). ~45 min per run on Genoa,
# ~20 min on Turin; records are kept under docs/results so a new machine rebuilds the report. Rerun to resume.
cd /work/main
mkdir -p /root/actorq_runs/lowp_sac_walker_stand && ln -sfn /root/actorq_runs/lowp_sac_walker_stand runs/lowp_sac_walker_stand
python -m experiments.lowp_study --config=configs/sac_actorq.py:walker_stand \
    --seeds=0,1 --variants=fp32,fp16_naive,fp16_fixed,bf16_fixed,fp16_amp --noablation --noactorq_comparison \
    --out_dir=runs/lowp_sac_walker_stand --keep_records=docs/results/lowp_sac_walker_stand
