"""A run's directory: resolved config, metrics logs, checkpoints, energy, breakdowns."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import ml_collections

from actorq.analysis.runs import ADDED_FIELDS_OFF, config_to_dict, flatten_config
from actorq.metrics.loggers import (
    RESUMES_FILE,
    Logger,
    append_jsonl,
    make_logger,
    read_resumes,
)

__all__ = [
    "RESUMABLE_KEYS",
    "ConfigMismatchError",
    "NoRunToResumeError",
    "RunDirectory",
    "RunDirectoryError",
    "RunExistsError",
    "config_to_dict",
    "default_run_dir",
    "flatten_config",
    "read_resumes",
    "resume_differences",
    "run_errors",
]

# The only config keys a --resume may change (dotted keys; a key also covers the keys below it).
# Every other key must equal the run's config.json: a resumed run continues the same experiment.
RESUMABLE_KEYS: tuple[str, ...] = (
    # The budget and the schedule of side work: how long the run goes on and how often it
    # evaluates, checkpoints and logs. None of them changes what is learned from a given state
    # (evaluations and checkpoints only read the learner), so extending a finished run or
    # evaluating it more often continues the same experiment.
    "max_actor_steps", "eval_every_steps", "eval_episodes", "checkpoint_every_steps",
    "log_every_seconds", "keep_checkpoints",
    # Derived from max_actor_steps by the on-policy presets (a linear decay spans the budget):
    # a larger budget on resume stretches the rest of the schedule, recorded in resumes.jsonl.
    "learner.learning_rate_decay_updates",
    # Where the run lives and how its processes are laid out: the launcher and the number of
    # actors change the topology, which users scale on resume (a single-process debug run
    # continued on local processes or a Ray cluster); the Ray and device settings place the same
    # nodes on other machines; shutdown_timeout_s only bounds how long stopping takes.
    "launcher", "num_actors", "run_dir", "shutdown_timeout_s", "ray_address",
    "ray_actor_placement", "ray_actor_resources", "ray_learner_resources", "learner_device",
    # Energy accounting: measured and reported, never fed back into training.
    "track_energy", "country_iso_code",
)


class RunDirectoryError(ValueError):
    """A run directory that cannot be used as asked; the message is one line for the user."""


class RunExistsError(RunDirectoryError, FileExistsError):
    """The directory already holds a run and ``--resume`` was not given."""


class NoRunToResumeError(RunDirectoryError, FileNotFoundError):
    """``--resume`` given but the directory holds no run (no ``config.json``)."""


class ConfigMismatchError(RunDirectoryError):
    """``--resume`` with a config that differs from the run's in a key not in RESUMABLE_KEYS."""


def default_run_dir(config: ml_collections.ConfigDict) -> Path:
    """``runs/<agent>_<task>_<quantizer>_seed<seed>`` unless ``config.run_dir`` is set."""
    if config.run_dir:
        return Path(config.run_dir)
    return Path("runs") / f"{config.agent}_{config.task}_{config.quantizer}_seed{config.seed}"


def run_errors() -> tuple[type[ValueError], ...]:
    """The errors of a run directory that cannot be used as asked, each with a one-line message
    for the user (an entry point prints ``error: <message>`` instead of a traceback):
    RunDirectoryError (exists, nothing to resume, config mismatch) and
    NoIntactCheckpointError (--resume found only damaged checkpoints; raised by the learner)."""
    from actorq.checkpointing import NoIntactCheckpointError

    return (RunDirectoryError, NoIntactCheckpointError)


class RunDirectory:
    """Creates and describes one run's files.

    ``config.json`` (resolved config, as the run started: a resume never rewrites it),
    ``resumes.jsonl`` (one record per resume: the allowed config changes and the step it
    continued from; :func:`read_resumes`), ``eval.jsonl``/``actor.jsonl``/``learner.jsonl``
    (+ CSV and TensorBoard events under ``tb/``), ``events.jsonl``, ``checkpoints/``,
    ``energy.json``, ``breakdown.json`` and ``breakdown.md``.

    Raises (RunDirectoryError, a ValueError, with a one-line message): RunExistsError,
    NoRunToResumeError, ConfigMismatchError, or a bad ``keep_checkpoints``.
    """

    def __init__(self, path: str | Path, config: ml_collections.ConfigDict, resume: bool) -> None:
        self.path = Path(path)
        # The resume record waiting for the step the learner restores (record_resume).
        self.resume_changes = self.check(self.path, config, resume)
        self.path.mkdir(parents=True, exist_ok=True)
        if not resume:
            (self.path / "config.json").write_text(json.dumps(config_to_dict(config), indent=2))
        self.started = time.time()

    @staticmethod
    def check(path: str | Path, config: ml_collections.ConfigDict,
              resume: bool) -> dict[str, Any] | None:
        """Everything the constructor checks, writing nothing: raises RunDirectoryError (one
        line) when ``path`` cannot take this run. With ``resume``, returns the allowed changes
        (``{"changed": {key: [old, new]}, "added": [key, ...]}``); else None."""
        path = Path(path)
        if path.exists() and any(path.iterdir()) and not resume:
            raise RunExistsError(
                f"run directory {path} already has a run; pass --resume to continue it or "
                "set --config.run_dir to a new directory"
            )
        if not resume:
            return None
        if not (path / "config.json").exists():
            raise NoRunToResumeError(f"--resume given but {path} holds no run to resume")
        try:
            saved = json.loads((path / "config.json").read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise RunDirectoryError(f"cannot resume {path}: its config.json does not read "
                                    f"({' '.join(str(e).split())})") from None
        if not isinstance(saved, dict):
            raise RunDirectoryError(f"cannot resume {path}: its config.json is not an object")
        changed, added, forbidden = resume_differences(saved, config_to_dict(config))
        if forbidden:
            listed = ", ".join(f"{key} ({_show(old)} -> {_show(new)})"
                               for key, (old, new) in forbidden.items())
            raise ConfigMismatchError(
                f"cannot resume {path}: the config differs from the run's config.json in "
                f"{listed}; only {', '.join(RESUMABLE_KEYS)} may change on resume"
            )
        return {"changed": changed, "added": added}

    def record_resume(self, actor_steps: int | None, **extra: Any) -> dict[str, Any] | None:
        """Appends this resume's record to ``resumes.jsonl`` (once; nothing if not resuming).

        Called by the learner once it restored a checkpoint, when the step it continues from is
        known; ``extra`` (``learner_steps``, ``checkpoint_step``, ...) goes into the record.
        """
        if self.resume_changes is None:
            return None
        now = time.time()
        record = {
            "time": now,
            "iso_time": datetime.fromtimestamp(now).astimezone().isoformat(timespec="seconds"),
            "changed": self.resume_changes["changed"],
            "added": self.resume_changes["added"],
            "actor_steps": actor_steps,
            **extra,
        }
        append_jsonl(self.path / RESUMES_FILE, record)
        self.resume_changes = None
        return record

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    def logger(self, label: str, print_every_seconds: float | None = None) -> Logger:
        return make_logger(self.path, label, step_key="actor_steps",
                           print_every_seconds=print_every_seconds)

    def write_json(self, name: str, value: Any) -> Path:
        path = self.path / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(value, indent=2, default=float))
        tmp.replace(path)
        return path


def resume_differences(
    saved: dict[str, Any], current: dict[str, Any]
) -> tuple[dict[str, list[Any]], list[str], dict[str, tuple[Any, Any]]]:
    """Compares a run's saved config with the config it is resumed with (both as dicts).

    Returns ``(changed, added, forbidden)``: ``changed`` maps each differing key of
    RESUMABLE_KEYS to ``[old, new]``; ``added`` lists the keys the saved config lacks (fields
    added to the code after the run started: accepted, so that new fields do not orphan old
    runs); ``forbidden`` maps every other differing key to ``(old, new)`` (a key gone from the
    current config included: its new value is the ``_ABSENT`` marker). An added key whose value
    reproducing the older code is known (``ADDED_FIELDS_OFF``) is forbidden when set to anything
    else: the run so far ran without it. Keys are dotted, sorted.
    """
    old, new = flatten_config(saved), flatten_config(current)
    changed: dict[str, list[Any]] = {}
    forbidden: dict[str, tuple[Any, Any]] = {}
    added = []
    for key in sorted(set(new) - set(old)):
        if key in ADDED_FIELDS_OFF and not _same(ADDED_FIELDS_OFF[key], new[key]) \
                and not _resumable(key):
            forbidden[key] = (_Absent(ADDED_FIELDS_OFF[key]), new[key])
        else:
            added.append(key)
    for key in sorted(old):
        if key in new and _same(old[key], new[key]):
            continue
        if key in new and _resumable(key):
            changed[key] = [old[key], new[key]]
        else:
            forbidden[key] = (old[key], new.get(key, _ABSENT))
    return changed, added, forbidden


class _Absent:
    """A key one config lacks; ``off`` is the value that reproduces the code from before it."""

    def __init__(self, off: Any = None) -> None:
        self.off = off

    def __repr__(self) -> str:
        return "absent" if self.off is None else f"absent, i.e. {json.dumps(self.off)}"


_ABSENT: Any = _Absent()  # the value of a key a config lacks


def _same(a: Any, b: Any) -> bool:
    # bool is an int in Python: True == 1, but a flag turned into a count is a change.
    return type(a) is type(b) and a == b or (
        not isinstance(a, bool) and not isinstance(b, bool)
        and isinstance(a, int | float) and isinstance(b, int | float) and a == b)


def _resumable(key: str) -> bool:
    return any(key == k or key.startswith(k + ".") for k in RESUMABLE_KEYS)


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, _Absent) else json.dumps(value)
