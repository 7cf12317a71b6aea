#!/bin/bash
# s27's queue for core 1 after the test suite: the Table 2 DQN MinAtar row on 100 episodes, the second
# seed of the fp32-actor QAT sweep at 4-6 bits, then the Björck walker_stand 300k study (resumable).
cd /work/main
bash runs/s27/table2_dqn_minatar.sh > /tmp/s27/table2_100.log 2>&1
bash runs/s26/qat_a2c_halfcheetah_fp32actors.sh 4,5,6 1 > /tmp/s27/qat_fp32_seed1.log 2>&1
bash runs/s23/bjorck_walker_stand_300k.sh > /tmp/s27/bjorck.log 2>&1
