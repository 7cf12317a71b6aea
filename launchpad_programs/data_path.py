"""The learner node's data-path part: where experience enters and how it paces the actors.

Both data paths look the same from outside: a table (a replay table of n-step transitions, or a
queue of unrolls, as the agent's builder says), the admission queue that experience chunks wait
in until the table's rate limiter takes them, and the actor pacing that turns the table's
admission into a global actor-step limit. Everything else of the learner node (publishing,
checkpoints, logs, drift, energy, progress) is shared by both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import ml_collections
import numpy as np

from actorq.core import Builder, Learner
from actorq.replay import AdmissionQueue, Table
from launchpad_programs import nodes
from launchpad_programs.pacing import ActorPacing, pacing_row

# How long a learner call may wait for its batch (the node checks first that the table has it).
SAMPLE_TIMEOUT_S = 5.0


class DataPath:
    """The table, its admission queue and the actor pacing of one run.

    Built in two steps: the table first (a checkpoint restore fills it), then :meth:`start` once
    the run's resumed counters are known.
    """

    def __init__(self, config: ml_collections.ConfigDict, builder: Builder) -> None:
        self._config = config
        self._builder = builder
        self.table: Table = nodes.make_table(config, builder)
        self._warmup = nodes.WarmupTable(self.table)
        self._admission = AdmissionQueue(self.table)
        self._pacing: ActorPacing | None = None
        self._received: list[int] = []
        self._own_at_start: list[int] = []

    def make_learner(self) -> Learner:
        """The agent's learner, reading its batches from the table (through the warm-up
        wrapper that compiles the update on one all-zeros batch first)."""
        return nodes.make_learner(self._config, self._builder, self._warmup,
                                  sample_timeout=SAMPLE_TIMEOUT_S)

    def warm_up(self, learner: Learner) -> None:
        """One learner call on a zeros batch, undone: compiles the update before actors run."""
        self._warmup.warm_up(learner)

    def start(self, base_steps: int, own_steps: Sequence[int]) -> None:
        """Begins pacing from the resumed counts: ``base_steps`` global actor steps so far,
        ``own_steps`` each actor's."""
        self._received = [0] * len(own_steps)
        self._own_at_start = list(own_steps)
        self._pacing = ActorPacing(self.table, base_steps, len(own_steps),
                                   nodes.envs_per_actor(self._config), self._builder.adder_lag,
                                   self._builder.steps_per_item)

    def receive(self, actor: int, chunk: Mapping[str, np.ndarray]) -> None:
        """An experience chunk from actor ``actor``: admitted now or queued behind the others."""
        self._admission.put(chunk)
        self._received[actor] += len(next(iter(chunk.values())))

    def drain(self) -> None:
        """Inserts the waiting items the rate limiter admits now."""
        self._admission.drain()

    def step_limit(self) -> int:
        """Global actor steps the actors may take now."""
        assert self._pacing is not None, "start() first"
        return self._pacing.step_limit()

    def batch_ready(self) -> bool:
        """Whether the table can give the learner a whole call's batch now."""
        return self.table.can_sample(self._builder.batch_items)

    @property
    def sampling_bounded(self) -> bool:
        """Whether the table stops the learner once it has taken what the inserts allow (ratio
        limiter, queue); False for ``MinSize``, which lets it sample forever."""
        return math.isfinite(self.table.rate_limiter.min_diff)

    def actor_lost(self, actor: int, steps_counted: int) -> None:
        """Actor ``actor`` died having been counted ``steps_counted`` steps in total: what never
        became items (its adders, unsent chunks) is allowed for in the step limit."""
        assert self._pacing is not None, "start() first"
        taken = steps_counted - self._own_at_start[actor]
        self._pacing.actor_lost(actor, taken - self._received[actor] * self._builder.steps_per_item)

    def log_row(self) -> dict[str, Any]:
        """Learner-log fields: the table size and the pacing counters."""
        return {"replay_size": self.table.size, **pacing_row(self.table, self._admission)}

    def close(self) -> None:
        self.table.close()
