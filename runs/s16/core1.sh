#!/bin/bash
# Core 1 (#23, Milan, 2026-12-05): DDPG BipedalWalker seed 0, int8 actors, 1M steps (QuaRL's row: 98).
# Stop with SIGTERM; rerun this script to resume.
cd /work/main
bash runs/s11/ddpg_row.sh bipedalwalker 0 100
