"""Train D4PG with quantized actors on a DeepMind Control task.

    python -m experiments.d4pg_actorq --config=configs/d4pg_actorq.py:walker_stand \
        --config.quantizer=int8 --config.num_actors=4 --config.seed=1
"""

from __future__ import annotations

from absl import app, flags
from ml_collections import config_flags

from launchpad_programs.launch import run_experiment

_CONFIG = config_flags.DEFINE_config_file("config", "configs/d4pg_actorq.py:walker_stand")
_RESUME = flags.DEFINE_bool("resume", False, "Continue the run in config.run_dir from its last "
                            "checkpoint.")


def main(argv: list[str]) -> None:
    del argv
    summary = run_experiment(_CONFIG.value, resume=_RESUME.value)
    print({k: v for k, v in summary.items()})


if __name__ == "__main__":
    app.run(main)
