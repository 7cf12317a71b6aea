"""A run's directory: resolved config, metrics logs, checkpoints, energy, breakdowns."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import ml_collections

from actorq.metrics.loggers import Logger, make_logger


def default_run_dir(config: ml_collections.ConfigDict) -> Path:
    """``runs/<agent>_<task>_<quantizer>_seed<seed>`` unless ``config.run_dir`` is set."""
    if config.run_dir:
        return Path(config.run_dir)
    return Path("runs") / f"{config.agent}_{config.task}_{config.quantizer}_seed{config.seed}"


class RunDirectory:
    """Creates and describes one run's files.

    ``config.json`` (resolved config), ``eval.jsonl``/``actor.jsonl``/``learner.jsonl`` (+ CSV and
    TensorBoard events under ``tb/``), ``checkpoints/``, ``energy.json``, ``breakdown.json`` and
    ``breakdown.md``.
    """

    def __init__(self, path: str | Path, config: ml_collections.ConfigDict, resume: bool) -> None:
        self.path = Path(path)
        if self.path.exists() and any(self.path.iterdir()) and not resume:
            raise FileExistsError(
                f"run directory {self.path} already has a run; pass --resume to continue it or "
                "set --config.run_dir to a new directory"
            )
        if resume and not (self.path / "config.json").exists():
            raise FileNotFoundError(f"--resume given but {self.path} holds no run to resume")
        self.path.mkdir(parents=True, exist_ok=True)
        if resume:
            self._check_resume_config(config)
        else:
            (self.path / "config.json").write_text(json.dumps(config_to_dict(config), indent=2))
        self.started = time.time()

    def _check_resume_config(self, config: ml_collections.ConfigDict) -> None:
        saved = json.loads((self.path / "config.json").read_text())
        current = config_to_dict(config)
        for key in ("agent", "task", "quantizer"):
            if saved.get(key) != current.get(key):
                raise ValueError(
                    f"cannot resume: config.{key} is {current.get(key)!r} but the run in "
                    f"{self.path} used {saved.get(key)!r}"
                )

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


def config_to_dict(config: ml_collections.ConfigDict) -> dict[str, Any]:
    """A JSON-safe dict of the resolved config."""
    return json.loads(config.to_json_best_effort())
