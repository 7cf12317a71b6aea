"""The learner node's checkpoints: the learner state, the run's counters and (with
``checkpoint_replay``) the replay table, every ``checkpoint_every_steps`` actor steps and at the
end.

A resume restores the newest checkpoint whose every part reads; each damaged newer one is passed
over with a ``checkpoint_skipped`` row in ``events.jsonl``.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import ml_collections

if TYPE_CHECKING:  # actorq.checkpointing loads JAX and Orbax: the learner's process only
    from actorq.checkpointing import Restored
    from actorq.metrics.loggers import Logger
    from launchpad_programs.run_directory import RunDirectory


class LearnerCheckpoints:
    """Saves and restores one run's learner checkpoints on its actor-step schedule."""

    def __init__(self, run_dir: RunDirectory, config: ml_collections.ConfigDict,
                 events: Logger) -> None:
        from actorq.checkpointing import Checkpointer

        self._checkpointer = Checkpointer(run_dir.checkpoints,
                                          max_to_keep=int(config.keep_checkpoints))
        self._dir_name = run_dir.checkpoints.name
        self._events = events
        self._with_replay = bool(config.checkpoint_replay)
        self._every = int(config.checkpoint_every_steps)
        self._next = self._every

    def restore(self, learner: Any, table: Any) -> Restored | None:
        """Restores the newest intact checkpoint into ``learner`` (and ``table``) and returns
        it; None when the run has none. Raises ``NoIntactCheckpointError`` (checkpointer
        closed) when every one is damaged."""
        from actorq.checkpointing import NoIntactCheckpointError

        try:
            restored = self._checkpointer.restore_newest_valid(
                learner.state(), table if self._with_replay else None)
        except NoIntactCheckpointError as e:
            self._log_skipped(e.skipped, None)
            self._checkpointer.close()
            raise
        if restored is not None:
            self._log_skipped(restored.skipped, restored.step)
            learner.restore(restored.learner_state)
        return restored

    def start(self, actor_steps: int) -> None:
        """The schedule continues from ``actor_steps`` (0, or the step a resume restored)."""
        self._next = (actor_steps // self._every + 1) * self._every

    def due(self, actor_steps: int) -> bool:
        return actor_steps >= self._next

    def save(self, learner: Any, counters: dict[str, Any], table: Any) -> None:
        """Saves at ``counters["actor_steps"]``; the next is due a whole interval later."""
        saved = json.loads(json.dumps(counters, default=float))  # Orbax's JsonSave
        self._checkpointer.save(saved["actor_steps"], learner.state(), saved,
                                table if self._with_replay else None)
        self.start(int(saved["actor_steps"]))

    def close(self) -> None:
        self._checkpointer.close()

    def _log_skipped(self, skipped: Any, restored_step: int | None) -> None:
        """One ``checkpoint_skipped`` row per damaged checkpoint passed over."""
        for skip in skipped:
            self._events.write({
                "event": "checkpoint_skipped", "step": skip.step,
                "path": f"{self._dir_name}/{skip.path}", "reason": skip.reason,
                "restored_step": restored_step, "time": time.time(),
            })
