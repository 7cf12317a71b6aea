"""The command line shared by the training entry points (``--config``, ``--resume``)."""

from __future__ import annotations

from collections.abc import Callable

from absl import flags, logging
from ml_collections import config_flags

from actorq.command_line import bad_input, fail
from launchpad_programs.launch import check_config, check_run_directory, run_experiment
from launchpad_programs.run_directory import run_errors


def make_main(default_config: str) -> Callable[[list[str]], None]:
    """Defines ``--config`` (default ``default_config``) and ``--resume``; returns an absl main."""
    config_flag = config_flags.DEFINE_config_file("config", default_config)
    resume_flag = flags.DEFINE_bool(
        "resume", False, "Continue the run in config.run_dir from its last checkpoint."
    )

    def main(argv: list[str]) -> None:
        del argv
        # Orbax and jax log every checkpoint step at INFO; keep the terminal for progress.
        if not flags.FLAGS["verbosity"].present:
            logging.set_verbosity(logging.WARNING)
        with bad_input():  # a bad flag or run dir: one line, not a traceback
            check_config(config_flag.value)
            check_run_directory(config_flag.value, resume_flag.value)
        try:
            summary = run_experiment(config_flag.value, resume=resume_flag.value)
        except (*run_errors(), FloatingPointError) as error:
            # A run dir that turned out unusable (no intact checkpoint), or an environment that
            # returned NaN (the run stops, naming the task and step): one line, no traceback.
            fail(error)
        print("summary:", summary)

    return main

