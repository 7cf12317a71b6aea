"""Train D4PG with quantized actors on a DeepMind Control task.

    python -m experiments.d4pg_actorq --config=configs/d4pg_actorq.py:walker_stand \
        --config.quantizer=int8 --config.num_actors=4 --config.seed=1
"""

from actorq.command_line import run_absl
from experiments.cli import make_main

main = make_main("configs/d4pg_actorq.py:walker_stand")

if __name__ == "__main__":
    run_absl(main)
