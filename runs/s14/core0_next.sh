#!/bin/bash
# After runs/s14/core0.sh: D4PG reacher_hard seed 0 with recipe actors and its PTQ (#25).
cd /work/main
while pgrep -f "runs/s14/core0.sh" > /dev/null; do sleep 30; done
bash runs/s14/d4pg_recipe.sh reacher_hard 0 948 > runs/s14/reacher0.log 2>&1
