"""One pacing rule for every launcher: the replay table's rate limiter.

``config.replay.rate_limiter`` picks it:

* ``"ratio"`` (default): Reverb's ``SampleToInsertRatio(samples_per_insert, min_size,
  error_buffer)``, as Acme's D4PG builds it (``error_buffer = min_size * tolerance *
  samples_per_insert``, tolerance 0.1). The learner waits when it is ahead (its samples block),
  and actors wait when it falls behind (their inserts block), so a learner that shares CPU
  cores with its actors still gets its share.
* ``"none"``: Reverb's ``MinSize``: actors are never blocked and the learner samples as fast as
  it can once ``min_size`` items are in (the paper's setting, right for an accelerator learner).

The table applies the rule. Experience reaches it through an
:class:`~actorq.replay.admission.AdmissionQueue` (which inserts what the limiter admits), and the
learner steps only when ``table.can_sample(batch)``. Actors are remote, so they get the same rule
as a credit: :class:`ActorPacing` turns ``table.admitted_inserts()`` into a global actor-step
limit that the launcher shares through its control channel. An actor at the limit flushes its
experience and waits (the ``blocked`` column of the runtime breakdown), still answering stop
requests and supervision.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import ml_collections

from actorq.replay import MinSize, RateLimiter, SampleToInsertRatio, Table

if TYPE_CHECKING:
    from actorq.core import Builder

# ratio and none pace a replay table; queue is the on-policy data path's (an agent whose builder
# says data_path="queue" must use it, and only it may).
RATE_LIMITERS = ("ratio", "none", "queue")
# Step limit shared when inserts never block (fits the control channel's int64).
UNLIMITED_STEPS = 1 << 62


def error_buffer(config: ml_collections.ConfigDict, builder: Builder) -> float:
    """Acme's error buffer, ``min_size * tolerance * samples_per_insert``, raised where needed so
    that one learner call always fits between the limiter's bounds (or the two sides could wait
    for each other forever)."""
    replay = config.replay
    spi = float(replay.samples_per_insert)
    tolerance = float(replay.samples_per_insert_tolerance)
    return max(float(replay.min_size) * tolerance * spi, builder.batch_items + 2.0 * spi)


def check_pacing(config: ml_collections.ConfigDict) -> None:
    """Fails with a clear message on replay settings that cannot pace a run."""
    replay = config.replay
    kind = replay.rate_limiter
    if kind not in RATE_LIMITERS:
        raise ValueError(
            f"unknown replay.rate_limiter {kind!r}; valid: {', '.join(RATE_LIMITERS)}")
    if int(replay.min_size) < 1:
        raise ValueError(f"replay.min_size must be >= 1, got {replay.min_size}")
    from actorq.agents.registry import agent_data_path

    if agent_data_path(config.agent) == "queue":
        if kind != "queue":
            raise ValueError(
                f"{config.agent} learns on-policy from a queue of unrolls: it needs "
                f"replay.rate_limiter='queue', got {kind!r}")
        if int(replay.max_times_sampled) != 1:
            raise ValueError("replay.rate_limiter='queue' takes each unroll once: "
                             f"replay.max_times_sampled must be 1, got {replay.max_times_sampled}")
        if int(config.learner.unrolls_per_batch) > int(replay.max_size):
            raise ValueError(
                f"learner.unrolls_per_batch={config.learner.unrolls_per_batch} does not fit a "
                f"queue of replay.max_size={replay.max_size} unrolls: the learner could never "
                "take a batch")
        return
    if kind == "queue":
        raise ValueError(f"replay.rate_limiter='queue' is the on-policy data path; "
                         f"{config.agent} learns from a replay table (use 'ratio' or 'none')")
    if kind == "none":
        if config.launcher == "single":
            raise ValueError(
                "replay.rate_limiter='none' lets actors run unpaced, but launcher 'single' "
                "interleaves one actor with the learner in one thread: there is nothing to pace "
                "against. Use rate_limiter='ratio', or launcher 'local' or 'ray'.")
        return
    spi = float(replay.samples_per_insert)
    if not (math.isfinite(spi) and spi > 0):
        raise ValueError(
            f"replay.rate_limiter='ratio' needs replay.samples_per_insert > 0, got {spi}")
    mts = int(replay.max_times_sampled)
    if mts != 0:
        raise ValueError(
            f"replay.rate_limiter='ratio' paces samples per insert itself; "
            f"replay.max_times_sampled={mts} would delete items while the limiter still counts "
            "on sampling them (with samples_per_insert > max_times_sampled the learner can never "
            "reach its ratio). Set replay.max_times_sampled=0, or use rate_limiter='none' "
            "(the paper's never-blocked actors with max_times_sampled=16).")
    tolerance = float(replay.samples_per_insert_tolerance)
    if not (math.isfinite(tolerance) and tolerance >= 0):
        raise ValueError(
            f"replay.samples_per_insert_tolerance must be >= 0, got {tolerance}")


def make_rate_limiter(config: ml_collections.ConfigDict, builder: Builder) -> RateLimiter:
    """The table's rate limiter for ``config.replay`` (see the module docstring)."""
    check_pacing(config)
    replay = config.replay
    if replay.rate_limiter == "queue":
        from actorq.replay.rate_limiters import Queue

        return Queue(int(replay.max_size))
    if replay.rate_limiter == "none":
        return MinSize(int(replay.min_size))
    return SampleToInsertRatio(float(replay.samples_per_insert), int(replay.min_size),
                               error_buffer(config, builder))


class ActorPacing:
    """The table's insert admission as a global actor-step limit.

    Every ``steps_per_item`` env steps eventually become one item (one per step for n-step
    transitions, one per unroll of T steps), so actors may take as many steps (this run) as the
    table has admitted items times ``steps_per_item``, plus ``slack``: the steps each actor can
    hold back through no fault of its own (an adder emits only ``adder_lag`` steps later; one
    batched call steps ``envs_per_actor`` environments past the limit). Actors flush their
    experience chunk before they wait. An actor killed mid-run loses what it held (adders,
    unsent chunks, on Ray unused step claims): the launcher reports how many of its steps never
    became items (:meth:`actor_lost`) and the limit allows for them. Without the slack actors
    could stop short of what the learner needs to sample, and both would wait.
    """

    def __init__(self, table: Table, base_steps: int, num_actors: int, envs_per_actor: int,
                 adder_lag: int, steps_per_item: int = 1) -> None:
        self._table = table
        self._steps_per_item = int(steps_per_item)
        self._offset = int(base_steps) - table.num_inserts * self._steps_per_item
        self._per_actor = int(envs_per_actor) * (int(adder_lag) + self._steps_per_item - 1)
        self._slack = int(num_actors) * self._per_actor
        self._lost: dict[int, int] = {}

    def step_limit(self) -> int:
        """Global actor steps allowed now (``UNLIMITED_STEPS`` when inserts never block)."""
        admitted = self._table.admitted_inserts()
        if math.isinf(admitted):
            return UNLIMITED_STEPS
        return (self._offset + int(admitted) * self._steps_per_item + self._slack
                + sum(self._lost.values()))

    def actor_lost(self, index: int, steps_without_items: int) -> None:
        """Actor ``index`` died: of the steps counted for it (all incarnations; on Ray that
        includes steps it had claimed but not taken), ``steps_without_items`` never reached
        replay (its adders, unsent chunks, unused claims). Those steps will never become items, so
        the limit allows for them."""
        self._lost[int(index)] = max(self._lost.get(int(index), 0), int(steps_without_items))


def pacing_row(table: Any, admission: Any) -> dict[str, float]:
    """Learner-log fields that show how the rate limiter paces the run."""
    inserts = table.num_inserts
    return {
        "replay_inserts": inserts,
        "replay_samples": table.num_samples,
        "samples_per_insert": table.num_samples / inserts if inserts else 0.0,
        "admission_waiting": admission.waiting_items,
    }
