#!/bin/bash
# #25: seeds 0-11 of both arms again, on the Xeon that ran seeds 12-35 (runs/s30/mountaincar_more_seeds.sh),
# so that all 36 seeds per arm come from one machine. The first 12 seeds ran on Genoa (5 vs 8 hold); the
# pooled 0-35 count mixed two machines. One seed of each arm in turn; ~2 min a run on one core; the report
# covers seeds 0-35. Rerun to resume: finished runs are reused.
FIRST=0 LAST=11 REPORT_FIRST=0 exec bash /work/main/runs/s30/mountaincar_more_seeds.sh
