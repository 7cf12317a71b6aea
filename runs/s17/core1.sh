#!/bin/bash
# Core 1 (#23, Xeon, 2026-12-05): DDPG BipedalWalker seed 0, int8 actors, 1M steps (QuaRL's row: 98),
# with the preset's new floor of -10 on training rewards. Stop with SIGTERM; rerun to resume.
cd /work/main
bash runs/s11/ddpg_row.sh bipedalwalker 0 100
