"""Run-or-reuse: the step every study shares (make sure a run of this config exists, finished).

A finished run with the same config is reused, an unfinished one resumed, a missing one run.
The studies (``experiments.speedup_report``, ``qat_sweep``, ``lowp_study``, ...) build grids of
these; reading the runs afterwards is ``actorq.analysis``'s job.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import ml_collections
from absl import logging

from actorq.analysis.plots import safe_name
from actorq.analysis.ptq import parse_quantizers
from actorq.analysis.runs import (
    config_differences,
    copy_run_records,
    has_checkpoint,
    run_status,
)
from actorq.command_line import Interrupted, check_writable_dir


class RunInterrupted(Interrupted):
    """A run stopped before ``max_actor_steps`` (Ctrl-C/SIGTERM); re-running resumes it."""


@contextlib.contextmanager
def records_kept_if_stopped(run_dir: str | Path, keep_dir: str | Path | None) -> Iterator[None]:
    """Around a :func:`run_or_load`: if the run is stopped (:class:`RunInterrupted`), its records
    so far are copied to ``keep_dir/<run name>`` before the stop goes on, so that its evaluations
    outlive the run directory (checkpoints stay only there; a machine handed back mid-run loses
    them). The copy's ``summary.json`` says ``interrupted``: every reader treats it as unfinished,
    and the finished run's copy replaces it."""
    try:
        yield
    except RunInterrupted:
        if keep_dir is not None and (Path(run_dir) / "config.json").is_file():
            copy_run_records([run_dir], keep_dir, finished_only=False)
        raise


def run_or_load(
    config: ml_collections.ConfigDict, run_dir: str | Path, reuse: bool = True
) -> Path:
    """Makes sure ``run_dir`` holds a finished run of ``config``; returns its path.

    * nothing there: runs ``config`` into ``run_dir`` (``config.run_dir`` is set to it);
    * a finished run with the same config (every field but ``run_dir``): reused as is;
    * an unfinished run with the same config: resumed from its newest checkpoint.

    Raises:
      FileExistsError: ``run_dir`` holds a run (or other files) and ``reuse`` is False.
      ValueError: the run there was made with a different config (the fields are listed).
      RunInterrupted: the run was interrupted (Ctrl-C); running again resumes it.
    """
    # The launchers are imported here so that importing this module stays light.
    from launchpad_programs.launch import run_experiment

    path = Path(run_dir)
    config = config.copy_and_resolve_references()
    config.run_dir = str(path)
    status = run_status(path)
    if status != "missing":
        if not reuse:
            raise FileExistsError(
                f"{path} already holds a run; pass --reuse to reuse (or resume) it, or choose "
                "another --out_dir"
            )
        if not (path / "config.json").is_file():
            raise FileExistsError(f"{path} is not empty but holds no run (no config.json)")
        different = config_differences(config, path)
        if different:
            raise ValueError(
                f"{path} holds a run with a different config (fields: {', '.join(different)}); "
                "choose another --out_dir or delete that run"
            )
        if status == "finished":
            logging.info("reusing finished run %s", path)
            return path
        if not has_checkpoint(path):
            # Resuming without a checkpoint would restart at step 0 and append to the old logs.
            raise FileExistsError(
                f"{path} holds an unfinished run with no checkpoint to resume; delete it to "
                "start that run over"
            )
        logging.info("resuming unfinished run %s", path)
    summary = run_experiment(config, resume=status == "partial")
    if summary.get("interrupted"):
        raise RunInterrupted(f"run {path} was interrupted; run the same command to resume it")
    return path


def check_grid(
    config: ml_collections.ConfigDict,
    quantizers: Sequence[str],
    seeds: Sequence[int],
    out_dir: str | Path,
) -> list[str]:
    """Validates a study grid before anything runs: every (quantizer) variant of ``config``
    passes ``check_config``, the seeds are non-negative and ``out_dir`` can be written.
    Returns the quantizer list; raises ValueError/OSError naming the bad input."""
    from launchpad_programs.launch import check_config

    specs = parse_quantizers(quantizers, include_baseline=False)
    if any(int(s) < 0 for s in seeds):
        raise ValueError(f"--seeds must be >= 0, got {list(seeds)}")
    for spec in specs:
        variant = config.copy_and_resolve_references()
        variant.quantizer = spec
        check_config(variant)
    check_writable_dir(out_dir, "--out_dir")
    return specs


def run_grid(
    config: ml_collections.ConfigDict,
    quantizers: Sequence[str],
    seeds: Sequence[int],
    out_dir: str | Path,
    reuse: bool = True,
    keep: str | Path | None = None,
) -> list[Path]:
    """Runs (or reuses) ``config`` for every (quantizer, seed) into
    ``out_dir/<quantizer>_seed<seed>``; returns the run directories. Unknown or duplicate
    quantizers raise ValueError before anything runs. With ``keep``, each run's records are
    copied to ``keep/<run name>`` as soon as it ends (a grid cut short keeps what finished, and
    the records so far of the run it stopped in)."""
    dirs = []
    for spec in parse_quantizers(quantizers, include_baseline=False):
        for seed in seeds:
            run_config = config.copy_and_resolve_references()
            run_config.quantizer = spec
            run_config.seed = int(seed)
            path = Path(out_dir) / f"{safe_name(spec)}_seed{seed}"
            with records_kept_if_stopped(path, keep or None):
                dirs.append(run_or_load(run_config, path, reuse))
            if keep:
                copy_run_records(dirs[-1:], keep)
    return dirs
