"""The on-policy data path's items: unrolls of ``T`` steps (``actorq.replay.UnrollAdder``)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from actorq.agents.transitions import observation_item
from actorq.replay.specs import ArraySpec
from actorq.replay.table import Table

UNROLL_FIELDS = ("observation", "action", "reward", "discount", "last", "next_observation",
                 "behaviour_logprob", "policy_version")


def unroll_signature(observation: int | ArraySpec, action: ArraySpec,
                     unroll_length: int) -> dict[str, ArraySpec]:
    """Queue signature of one unroll: every field has a leading ``[T]`` axis.

    ``observation``: a flat observation size, or the stored observation spec."""
    t = int(unroll_length)
    item = observation_item(observation)
    obs = ArraySpec((t, *item.shape), item.dtype)
    scalar = ArraySpec((t,), np.dtype(np.float32))
    return {
        "observation": obs,
        "action": ArraySpec((t, *action.shape), action.dtype),
        "reward": scalar,
        "discount": scalar,
        "last": scalar,
        "next_observation": obs,
        "behaviour_logprob": scalar,
        "policy_version": ArraySpec((t,), np.dtype(np.int32)),
    }


def unroll_batches(table: Table, unrolls_per_batch: int,
                   timeout: float | None = None) -> Iterator[dict[str, np.ndarray]]:
    """Yields batches of ``[unrolls_per_batch, T, ...]`` arrays, each unroll taken once (the
    table is a queue: FIFO, ``max_times_sampled=1``)."""
    while True:
        sample = table.sample(unrolls_per_batch, timeout=timeout)
        yield {key: sample.data[key] for key in UNROLL_FIELDS}
