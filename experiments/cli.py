"""The command line shared by the training entry points (``--config``, ``--resume``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from absl import flags, logging
from ml_collections import config_flags

from launchpad_programs.launch import check_config, run_experiment


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
        try:
            check_config(config_flag.value)
        except (ValueError, ImportError) as e:  # a bad flag: one line, not a traceback
            raise SystemExit(f"error: {e}") from None
        summary = run_experiment(config_flag.value, resume=resume_flag.value)
        print("summary:", summary)

    return main


def parse_ints(values: str | Sequence[str | int], name: str) -> list[int]:
    """A list flag (``DEFINE_list``: ``--seeds=0,1,2``) as ``[0, 1, 2]``; ValueError naming the
    flag for an empty list, a non-integer or a duplicate."""
    items = values.split(",") if isinstance(values, str) else list(values)
    out: list[int] = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        try:
            out.append(int(text))
        except ValueError:
            raise ValueError(f"--{name}: {text!r} is not an integer") from None
    if not out:
        raise ValueError(f"--{name} is empty")
    if len(set(out)) != len(out):
        raise ValueError(f"--{name} has duplicates: {out}")
    return out
