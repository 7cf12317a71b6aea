"""Train DQN with quantized actors on a Gym task.

    python -m experiments.dqn_actorq --config=configs/dqn_actorq.py:cartpole \
        --config.quantizer=int8 --config.num_actors=4 --config.seed=1
"""

from actorq.command_line import run_absl
from experiments.cli import make_main

main = make_main("configs/dqn_actorq.py:cartpole")

if __name__ == "__main__":
    run_absl(main)
