#!/bin/bash
# Core 0 after DDPG HalfCheetah fp32 seed 0 (#25, Milan, 2026-12-05): D4PG cheetah_run_cpu seed 3 with recipe
# actors, then its PTQ (the 2-seed hold is 1 of 3 so far). Resumable: rerun the last line.
cd /work/main
while pgrep -f "runs/s16/core0.sh" > /dev/null; do sleep 20; done
bash runs/s14/d4pg_recipe.sh cheetah_run 3 732 > runs/s16/cheetah3.log 2>&1
