"""Orbax checkpoints of the learner state and run counters (+ optionally the replay table).

Layout: ``<dir>/<step>/{learner,counters}`` managed by Orbax (atomic, keeps the newest
``max_to_keep``); replay contents, when kept, go next to it as ``<dir>/replay_<step>/`` in the
table's own numpy format, pruned with their step. No pickle anywhere.

A resume takes the newest intact pair (:meth:`Checkpointer.restore_newest_valid`): a step whose
learner state, counters or replay fails to read is skipped, and once an older pair is restored
the skipped ones are moved aside to ``<dir>_skipped/`` (kept for inspection; left in place they
would block the new saves of those steps).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
import traceback
import zipfile
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp
from absl import logging

from actorq.replay.table import Table


class NoIntactCheckpointError(ValueError):
    """Every checkpoint in the directory failed to restore; the message lists why, one line."""

    def __init__(self, message: str, skipped: tuple[SkippedCheckpoint, ...] = ()) -> None:
        super().__init__(message)
        self.skipped = skipped


@dataclasses.dataclass(frozen=True)
class SkippedCheckpoint:
    """A checkpoint step passed over on restore: ``path`` is the part that failed to read
    (relative to the checkpoint directory, e.g. ``replay_50000/items.npz`` or ``50000/``)."""

    step: int
    path: str
    reason: str

    def describe(self) -> str:
        return f"step {self.step} ({self.path}: {self.reason})"


@dataclasses.dataclass(frozen=True)
class Restored:
    """What :meth:`Checkpointer.restore_newest_valid` restored."""

    step: int
    learner_state: Any
    counters: dict[str, Any]
    skipped: tuple[SkippedCheckpoint, ...]


class Checkpointer:
    """Saves and restores ``(learner_state, counters[, replay])`` by step."""

    def __init__(self, directory: str | Path, max_to_keep: int = 2) -> None:
        if isinstance(max_to_keep, bool) or int(max_to_keep) != max_to_keep or max_to_keep < 1:
            raise ValueError(f"max_to_keep must be an integer >= 1, got {max_to_keep!r}")
        self.directory = Path(directory).absolute()
        self.max_to_keep = int(max_to_keep)
        self._manager = self._open()

    def _open(self) -> ocp.CheckpointManager:
        return ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(max_to_keep=self.max_to_keep, create=True),
        )

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def all_steps(self) -> list[int]:
        return sorted(self._manager.all_steps())

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
        """Restores ``(learner_state, counters)`` of ``step`` (default: the newest); fills
        ``table`` if its contents were kept. Any damage raises (see restore_newest_valid)."""
        step = self._manager.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"no checkpoint found in {self.directory}")
        state, counters = self._restore_learner(step, learner_template)
        replay_dir = self.directory / f"replay_{step}"
        if table is not None and replay_dir.exists():
            table.restore(replay_dir)
        return state, counters

    def restore_newest_valid(
        self, learner_template: Any, table: Table | None = None
    ) -> Restored | None:
        """Restores the newest step whose every part reads: the learner state (its tree, shapes
        and dtypes must match ``learner_template``), the counters (``actor_steps`` must be the
        step) and, when ``table`` is given, ``replay_<step>/`` into ``table``.

        A step that fails in any part is skipped (a warning, and a SkippedCheckpoint in the
        result naming the file and the reason), and the next older one is tried. The table is
        only ever filled by a complete read: ``Table.restore`` reads and validates the whole
        checkpoint before it touches the table, and resets it before filling, so a failed step
        leaves nothing behind. Once a step restored, the skipped (newer) ones are moved to
        ``<dir>_skipped/`` so that the run can save those steps again.

        Returns None when the directory holds no checkpoint at all. Raises
        NoIntactCheckpointError (one line listing every step and why) when none restores.
        """
        steps = sorted(self._manager.all_steps(), reverse=True)
        if not steps:
            return None
        skipped: list[SkippedCheckpoint] = []
        _drop_closed_loop_reports()
        for step in steps:
            try:
                state, counters = self._restore_learner(step, learner_template)
                if counters.get("actor_steps") != step:
                    raise ValueError(f"its counters say actor_steps="
                                     f"{counters.get('actor_steps')!r}, not {step}")
            except Exception as e:  # noqa: BLE001 - any failure to read skips the step
                skipped.append(self._skip(step, f"{step}/", e))
                continue
            if table is not None:
                replay_dir = self.directory / f"replay_{step}"
                try:
                    if not replay_dir.is_dir():
                        raise FileNotFoundError("missing")
                    table.restore(replay_dir)
                except Exception as e:  # noqa: BLE001
                    skipped.append(self._skip(step, _replay_part(replay_dir, e), e))
                    continue
            self._set_aside(skipped)
            return Restored(step, state, counters, tuple(skipped))
        raise NoIntactCheckpointError(
            f"no intact checkpoint in {self.directory}: "
            + ", ".join(s.describe() for s in skipped), tuple(skipped))

    def _restore_learner(self, step: int, learner_template: Any) -> tuple[Any, dict[str, Any]]:
        template = jax.tree_util.tree_map(np.asarray, learner_template)
        restored = self._manager.restore(
            step,
            args=ocp.args.Composite(
                learner=ocp.args.StandardRestore(template),
                counters=ocp.args.JsonRestore(),
            ),
        )
        state, counters = restored["learner"], restored["counters"]
        _check_like(template, state)
        if not isinstance(counters, dict):
            raise ValueError(f"counters are a {type(counters).__name__}, not a JSON object")
        return state, dict(counters)

    def _skip(self, step: int, part: str, error: BaseException) -> SkippedCheckpoint:
        skipped = SkippedCheckpoint(step, part, _reason(error))
        logging.warning("checkpoint step %d in %s is damaged, trying an older one: %s", step,
                        self.directory, skipped.describe())
        return skipped

    def _set_aside(self, skipped: list[SkippedCheckpoint]) -> None:
        """Moves the skipped steps (Orbax dir and replay dir) to ``<dir>_skipped/``: Orbax
        would not save a step at or below its newest one, nor a step it already has."""
        if not skipped:
            return
        aside = self.directory.parent / f"{self.directory.name}_skipped"
        aside.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for s in skipped:
            for name in (str(s.step), f"replay_{s.step}"):
                source = self.directory / name
                if source.exists():
                    target = aside / name
                    if target.exists():
                        target = aside / f"{name}.{stamp}"
                    shutil.move(str(source), str(target))
        self._manager.close()
        self._manager = self._open()

    def _prune_replay(self) -> None:
        keep = {f"replay_{s}" for s in self._manager.all_steps()}
        for path in self.directory.glob("replay_*"):
            if path.name not in keep:
                shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        self._manager.close()


def _check_like(template: Any, restored: Any) -> None:
    """ValueError unless ``restored`` has ``template``'s tree structure, shapes and dtypes."""
    t_leaves, t_tree = jax.tree_util.tree_flatten(template)
    r_leaves, r_tree = jax.tree_util.tree_flatten(restored)
    if t_tree != r_tree:
        raise ValueError("learner state has a different structure than the learner's")
    for index, (t, r) in enumerate(zip(t_leaves, r_leaves)):
        if np.shape(t) != np.shape(r) or np.asarray(t).dtype != np.asarray(r).dtype:
            raise ValueError(f"learner state leaf {index} is {np.asarray(r).dtype}"
                             f"{list(np.shape(r))}, the learner's {np.asarray(t).dtype}"
                             f"{list(np.shape(t))}")


def _replay_part(replay_dir: Path, error: BaseException) -> str:
    """The file of ``replay_<step>/`` that ``error`` came from, as best it can be told."""
    name = replay_dir.name + "/"
    filename = getattr(error, "filename", None)
    if filename:
        path = Path(filename)
        return name + path.name if path.parent == replay_dir else name
    if isinstance(error, json.JSONDecodeError):
        return name + "meta.json"
    if isinstance(error, zipfile.BadZipFile | EOFError):
        return name + "items.npz"
    frames = [f.filename for f in traceback.extract_tb(error.__traceback__)]
    if any("zipfile" in f or "npyio" in f or "numpy/lib/format" in f or "_format_impl" in f
           for f in frames):
        return name + "items.npz"
    return name


def _reason(error: BaseException) -> str:
    """``error`` in one short line."""
    message = " ".join(str(error).split())
    if isinstance(error, json.JSONDecodeError):
        message = f"invalid JSON ({message})"
    elif not message:
        message = type(error).__name__
    return message if len(message) <= 300 else message[:297] + "..."


_quieted = False


def _drop_closed_loop_reports() -> None:
    """Drops tensorstore's ``RuntimeError('Event loop is closed')`` unraisable reports.

    When Orbax reads a damaged checkpoint, tensorstore callbacks still scheduled on Orbax's
    (already closed) event loop fail and print as unraisable tracebacks: noise after an error
    that restore_newest_valid reports in one line. They arrive after the restore returns, so the
    filter stays installed (once per process); every other report goes to the previous hook.
    """
    global _quieted
    if _quieted:
        return
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, RuntimeError) and str(exc) == "Event loop is closed":
            return
        previous(unraisable)

    sys.unraisablehook = hook
    _quieted = True
