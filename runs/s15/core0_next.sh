#!/bin/bash
# After runs/s15/core0.sh: D4PG cheetah_run_cpu seed 3 with recipe actors, then PTQ of its policy: the
# second cheetah policy for the recipe's PTQ, and a fourth seed for the 2-seed hold (#25). Resumable.
cd /work/main
while pgrep -f "runs/s15/core0.sh" > /dev/null; do sleep 20; done
bash runs/s14/d4pg_recipe.sh cheetah_run 3 732 > runs/s15/cheetah3.log 2>&1
