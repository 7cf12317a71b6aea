"""Train PPO with quantized actors on a Gym task (on-policy: unrolls through a queue).

    python -m experiments.ppo_actorq --config=configs/ppo_actorq.py:cartpole \
        --config.quantizer=int8 --config.seed=1
"""

from actorq.command_line import run_absl
from experiments.cli import make_main

main = make_main("configs/ppo_actorq.py:cartpole")

if __name__ == "__main__":
    run_absl(main)
