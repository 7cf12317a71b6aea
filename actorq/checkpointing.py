"""Orbax checkpoints of the learner state and run counters (+ optionally the replay table).

Layout: ``<dir>/<step>/{learner,counters}`` managed by Orbax (atomic, keeps the newest few);
replay contents, when kept, go next to it as ``<dir>/replay_<step>/`` in the table's own
numpy format. No pickle anywhere.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from actorq.replay.table import Table


class Checkpointer:
    """Saves and restores ``(learner_state, counters[, replay])`` by step."""

    def __init__(self, directory: str | Path, max_to_keep: int = 2) -> None:
        self.directory = Path(directory).absolute()
        self._manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True),
        )

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def save(
        self,
        step: int,
        learner_state: Any,
        counters: dict[str, Any],
        table: Table | None = None,
    ) -> None:
        """Writes a checkpoint at ``step`` (overwriting nothing: a step is saved once)."""
        if step in self._manager.all_steps():
            return
        state = jax.tree_util.tree_map(np.asarray, learner_state)
        if table is not None:
            replay_dir = self.directory / f"replay_{step}"
            table.save(replay_dir)
        self._manager.save(
            step,
            args=ocp.args.Composite(
                learner=ocp.args.StandardSave(state),
                counters=ocp.args.JsonSave(counters),
            ),
        )
        self._manager.wait_until_finished()
        self._prune_replay()

    def restore(
        self, learner_template: Any, table: Table | None = None, step: int | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Restores ``(learner_state, counters)``; fills ``table`` if its contents were kept."""
        step = self._manager.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"no checkpoint found in {self.directory}")
        template = jax.tree_util.tree_map(np.asarray, learner_template)
        restored = self._manager.restore(
            step,
            args=ocp.args.Composite(
                learner=ocp.args.StandardRestore(template),
                counters=ocp.args.JsonRestore(),
            ),
        )
        replay_dir = self.directory / f"replay_{step}"
        if table is not None and replay_dir.exists():
            table.restore(replay_dir)
        return restored["learner"], dict(restored["counters"])

    def _prune_replay(self) -> None:
        keep = {f"replay_{s}" for s in self._manager.all_steps()}
        for path in self.directory.glob("replay_*"):
            if path.name not in keep:
                shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        self._manager.close()
