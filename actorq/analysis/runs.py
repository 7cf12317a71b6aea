"""Run directories as study inputs: is a run there, finished, and made with this config?

Nothing here starts a run (the launch side's run-or-reuse step does); the one writer copies a
run's small record files elsewhere.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import ml_collections

RunStatus = Literal["missing", "finished", "partial"]

# What a finished run's reports read (config, evaluations, end state, energy, the learner's
# metrics): kilobytes to tens of kilobytes, against the megabytes of checkpoints and actor logs, so
# they can be kept beside a docs page.
RECORD_FILES = ("config.json", "eval.jsonl", "summary.json", "energy.json", "learner.jsonl")

# A run "holds" a target when its last evaluations stay there, not only its final one (DQN on
# CartPole swings between 500 and ~200, so one final score is a coin toss): the issues' "holds"
# is the mean of the last HELD_WINDOW evaluations.
HELD_WINDOW = 5

# Fields that may differ between a requested config and a reusable run (where it lives).
_IGNORED_CONFIG_KEYS = frozenset({"run_dir"})
# Fields added after runs were saved, with the value that reproduces the code from before them:
# a saved run lacking one matches a request for that value (so adding a switch, off by
# default, does not orphan every stored run).
ADDED_FIELDS_OFF: dict[str, Any] = {"learner.target_update_tau": 0.0, "keep_checkpoints": 2,
                                    "learner.torso": "mlp", "learner.gsde": False,
                                    "qat_actors": "quantized",
                                    "learner.critic_layer_norm": False,
                                    "learner.learning_rate_decay_steps": 0}


def run_status(run_dir: str | Path) -> RunStatus:
    """``missing`` (absent or empty dir), ``finished`` (a summary.json from an uninterrupted run)
    or ``partial`` (anything else: crashed, interrupted or still running)."""
    path = Path(run_dir)
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        return "missing"
    summary = path / "summary.json"
    if summary.is_file():
        try:
            data = json.loads(summary.read_text())
        except json.JSONDecodeError:
            return "partial"
        if isinstance(data, dict) and data.get("interrupted") is False:
            return "finished"
    return "partial"


def flatten_config(value: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config dict as ``{"learner.batch_size": 64, ...}`` (dotted keys, leaves only;
    an empty dict is a leaf)."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flatten_config(item, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


def config_to_dict(config: ml_collections.ConfigDict) -> dict[str, Any]:
    """A JSON-safe dict of the resolved config (what a run's ``config.json`` holds)."""
    return json.loads(config.to_json_best_effort())


def config_differences(config: ml_collections.ConfigDict, run_dir: str | Path) -> list[str]:
    """Dotted config fields whose value differs from the run's saved ``config.json``."""
    saved = flatten_config(json.loads((Path(run_dir) / "config.json").read_text()))
    wanted = flatten_config(config_to_dict(config))
    for key, off in ADDED_FIELDS_OFF.items():
        if key in wanted:
            saved.setdefault(key, off)
    keys = (set(saved) | set(wanted)) - _IGNORED_CONFIG_KEYS
    return sorted(k for k in keys if saved.get(k, "<absent>") != wanted.get(k, "<absent>"))


def has_checkpoint(run_dir: str | Path) -> bool:
    """Whether the run saved at least one learner checkpoint (Orbax names them by step)."""
    checkpoints = Path(run_dir) / "checkpoints"
    return checkpoints.is_dir() and any(p.name.isdigit() for p in checkpoints.iterdir())


def copy_run_records(run_dirs: Sequence[str | Path], dest_dir: str | Path,
                     files: Sequence[str] = RECORD_FILES, *,
                     finished_only: bool = True) -> list[Path]:
    """Copies ``files`` (those a run has) of each run to ``dest_dir/<run name>``.

    The copies are finished runs to every reader here (``run_status``, ``load_run``), so a study
    pointed at ``dest_dir`` rebuilds its report from them without the run directories or
    retraining. Raises ValueError naming a run that is not finished (unless ``finished_only`` is
    False: a study that records failed runs, and judges them itself) or whose name repeats. A run
    already at its destination is left as it is.
    """
    dest = Path(dest_dir)
    names = [Path(d).name for d in run_dirs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"run names repeat ({', '.join(repeated)}): their records would collide")
    copies = []
    for run_dir in map(Path, run_dirs):
        if finished_only and run_status(run_dir) != "finished":
            raise ValueError(f"{run_dir} is not a finished run (no summary.json of a whole run)")
        target = dest / run_dir.name
        target.mkdir(parents=True, exist_ok=True)
        if target.resolve() != run_dir.resolve():
            for name in files:
                if (run_dir / name).is_file():
                    shutil.copy2(run_dir / name, target / name)
        copies.append(target)
    return copies
