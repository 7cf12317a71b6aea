"""When the learner node publishes a new policy version to the actors.

* ``publish_period > 0``: every that many learner steps;
* ``0`` (default) under the single launcher: right before the actor's pulls (every
  ``pull_period`` actor steps, counted in actor steps, not on the clock), so a run there is
  reproducible from its seed and only what is pulled is quantized;
* ``0`` elsewhere: whenever the package is stale, but only once 9x the last publish's cost has
  passed since it, so quantizing takes at most ~10% of the learner's time.
"""

from __future__ import annotations

import time

import ml_collections


class PublishSchedule:
    """The publishing rule of one run; ``published`` tells it what the last publish cost."""

    def __init__(self, config: ml_collections.ConfigDict, base_steps: int) -> None:
        self._period = int(config.publish_period)
        self.on_pulls = config.launcher == "single" and self._period == 0
        self._pull_period = int(config.pull_period)
        self._next_pull = (base_steps // self._pull_period + 1) * self._pull_period
        self._last_cost = 0.0  # measured on the first publish after the warm-up one
        self._last_end = time.perf_counter()

    def pull_due(self, actor_steps: int) -> bool:
        """Single launcher: whether the actor's steps so far made a pull due since the last
        call (and, if so, the next pull is counted from here)."""
        if not self.on_pulls or actor_steps < self._next_pull:
            return False
        self._next_pull = (actor_steps // self._pull_period + 1) * self._pull_period
        return True

    def due(self, stale_steps: int, now: float) -> bool:
        """After a learner step, ``stale_steps`` past the published version: whether to publish
        now (never when publishing follows the pulls)."""
        if self.on_pulls:
            return False
        if self._period > 0:
            return stale_steps >= self._period
        return stale_steps > 0 and now - self._last_end >= 9.0 * self._last_cost

    def published(self, start: float, end: float) -> None:
        """A publish ran from ``start`` to ``end`` (``time.perf_counter`` seconds)."""
        self._last_cost, self._last_end = end - start, end
