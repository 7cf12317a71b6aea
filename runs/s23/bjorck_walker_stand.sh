#!/bin/bash
# #26 item 6: Björck et al. beyond one task. SAC walker_stand, 256-256 preset, 100k env steps (fp32 SAC here passes
# 939, the published SAC return at 500k agent steps, by 100k env steps: docs/learning.md), 2 seeds, fp32 / naive
# fp16 / fp16 + the six fixes / bf16 + the fixes / supervised mixed precision (fp16_amp). Records are kept under
# docs/results so a new machine rebuilds the report. Rerun to resume.
cd /work/main
mkdir -p /root/actorq_runs/lowp_sac_walker_stand_100k && ln -sfn /root/actorq_runs/lowp_sac_walker_stand_100k runs/lowp_sac_walker_stand_100k
python -m experiments.lowp_study --config=configs/sac_actorq.py:walker_stand --config.max_actor_steps=100000 \
    --seeds=0,1 --variants=fp32,fp16_naive,fp16_fixed,bf16_fixed,fp16_amp --noablation --noactorq_comparison \
    --out_dir=runs/lowp_sac_walker_stand_100k --keep_records=docs/results/lowp_sac_walker_stand_100k \
    --note="100k env steps (the preset's 300k cut: fp32 passes the published 939 by then)"
