#!/bin/bash
# Session 15 (Milan), core 1: after Table 2's Seaquest row (runs/s14/table2_seaquest.sh), D4PG
# finger_spin_cpu seed 0 then hopper_stand_cpu seed 1 with recipe actors, each with its PTQ (#25). Resumable.
cd /work/main
while pgrep -f "runs/s14/table2_seaquest.sh" > /dev/null; do sleep 20; done
bash runs/s14/d4pg_recipe.sh finger_spin 0 810 > runs/s15/finger0.log 2>&1
bash runs/s14/d4pg_recipe.sh hopper_stand 1 836 > runs/s15/hopper1.log 2>&1
