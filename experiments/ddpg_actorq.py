"""Train DDPG with quantized actors on a Gym task (off-policy: n-step transitions through replay).

    python -m experiments.ddpg_actorq --config=configs/ddpg_actorq.py:halfcheetah \
        --config.quantizer=int8 --config.seed=1
"""

from actorq.command_line import run_absl
from experiments.cli import make_main

main = make_main("configs/ddpg_actorq.py:halfcheetah")

if __name__ == "__main__":
    run_absl(main)
