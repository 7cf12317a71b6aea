#!/bin/bash
# After runs/s15/core1.sh and the SAC PTQ: PPO MinAtar Asterix seed 1 with int8 actors, 10M steps (#24's
# second seed). Stop with SIGTERM; rerun runs/s13/ppo_minatar.sh asterix 1 to resume.
cd /work/main
while pgrep -f "runs/s15/core1.sh|runs/s15/sac_cartpole.sh" > /dev/null; do sleep 20; done
bash runs/s13/ppo_minatar.sh asterix 1 > runs/s15/asterix1.log 2>&1
