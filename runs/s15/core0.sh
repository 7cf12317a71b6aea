#!/bin/bash
# Session 15 (Milan), core 0: after the walker_stand PTQ (runs/s14/ptq_walker.sh), D4PG hopper_stand_cpu
# seed 0 then finger_spin_cpu seed 1 with recipe actors, each followed by its PTQ (#25). Resumable.
cd /work/main
while pgrep -f "runs/s14/ptq_walker.sh" > /dev/null; do sleep 20; done
bash runs/s14/d4pg_recipe.sh hopper_stand 0 836 > runs/s15/hopper0.log 2>&1
bash runs/s14/d4pg_recipe.sh finger_spin 1 810 > runs/s15/finger1.log 2>&1
