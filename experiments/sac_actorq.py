"""Train SAC (fp32, fp16 or bf16 learner) with quantized actors on a DeepMind Control task.

    python -m experiments.sac_actorq --config=configs/sac_actorq.py:walker_stand \
        --config.quantizer=int8 --config.learner.precision=fp16 \
        --config.learner.lowp_fixes=all --config.seed=1
"""

from actorq.command_line import run_absl
from experiments.cli import make_main

main = make_main("configs/sac_actorq.py:walker_stand")

if __name__ == "__main__":
    run_absl(main)
