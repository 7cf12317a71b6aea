"""Samplers (Reverb "selectors"): which stored item a sample returns.

A ``Sampler`` is an immutable config (safe to share between tables); each table builds its own
mutable ``Selector`` from it with ``make_selector(capacity)``. Selectors address items by
storage slot (0 <= slot < capacity), never by key.
"""

from __future__ import annotations

import abc
import collections
import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from actorq.replay.sum_tree import SumTree


class Selector(abc.ABC):
    """Mutable per-table sampling state over storage slots."""

    @abc.abstractmethod
    def insert(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        """Adds new items (in insertion order) at ``slots``."""

    @abc.abstractmethod
    def update(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        """Changes the priorities of present items."""

    @abc.abstractmethod
    def delete(self, slot: int) -> None:
        """Removes the item at ``slot``."""

    @abc.abstractmethod
    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Draws n slots with replacement; returns (slots int64, probabilities float64)."""

    @abc.abstractmethod
    def clear(self) -> None:
        """Removes every item."""


class Sampler(abc.ABC):
    """Immutable sampler config; see module docstring."""

    @abc.abstractmethod
    def make_selector(self, capacity: int) -> Selector:
        """A fresh, empty selector for a table of ``capacity`` slots."""

    @abc.abstractmethod
    def config(self) -> dict[str, Any]:
        """JSON-serialisable config; ``sampler_from_config`` inverts it."""

    def check_priorities(self, priorities: np.ndarray) -> None:
        """Raises ValueError if the selector could not store these (already finite, >= 0)."""
        del priorities


class _UniformSelector(Selector):
    # Dense array of present slots + each slot's position in it: O(1) insert and
    # swap-remove delete, vectorised sampling by integer indexing.
    def __init__(self, capacity: int) -> None:
        self._slots = np.zeros(capacity, dtype=np.int64)
        self._pos = np.full(capacity, -1, dtype=np.int64)
        self._size = 0

    def insert(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        k = len(slots)
        self._slots[self._size : self._size + k] = slots
        self._pos[slots] = np.arange(self._size, self._size + k)
        self._size += k

    def update(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        pass

    def delete(self, slot: int) -> None:
        pos = self._pos[slot]
        last = self._slots[self._size - 1]
        self._slots[pos] = last
        self._pos[last] = pos
        self._pos[slot] = -1
        self._size -= 1

    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        idx = rng.integers(0, self._size, size=n)
        return self._slots[idx], np.full(n, 1.0 / self._size)

    def clear(self) -> None:
        self._pos.fill(-1)
        self._size = 0


class _FifoSelector(Selector):
    # OrderedDict gives O(1) arbitrary delete and O(1) access to the oldest entry.
    def __init__(self) -> None:
        self._order: collections.OrderedDict[int, None] = collections.OrderedDict()

    def insert(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        for s in slots.tolist():
            self._order[s] = None

    def update(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        pass

    def delete(self, slot: int) -> None:
        del self._order[slot]

    def oldest(self) -> int:
        return next(iter(self._order))

    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        oldest = next(iter(self._order))
        return np.full(n, oldest, dtype=np.int64), np.ones(n)

    def clear(self) -> None:
        self._order.clear()


class _PrioritizedSelector(Selector):
    def __init__(self, capacity: int, exponent: float) -> None:
        self._exponent = exponent
        self._tree = SumTree(capacity)
        self._present = np.zeros(capacity, dtype=bool)
        self._size = 0

    def _transform(self, priorities: np.ndarray) -> np.ndarray:
        return np.power(priorities, self._exponent)

    def insert(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        self._tree.set(slots, self._transform(priorities))
        self._present[slots] = True
        self._size += len(slots)

    def update(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        self._tree.set(slots, self._transform(priorities))

    def delete(self, slot: int) -> None:
        self._tree.set(slot, 0.0)
        self._present[slot] = False
        self._size -= 1

    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        total = self._tree.total
        if total <= 0.0:
            # Every present item has priority 0: fall back to uniform rather than fail.
            present = np.flatnonzero(self._present)
            return present[rng.integers(0, present.size, size=n)], np.full(n, 1.0 / present.size)
        slots = self._tree.sample(rng, n)
        return slots, self._tree.get(slots) / total

    def clear(self) -> None:
        self._tree.clear()
        self._present.fill(False)
        self._size = 0


@dataclasses.dataclass(frozen=True)
class Uniform(Sampler):
    """Samples every present item with equal probability 1 / size."""

    def make_selector(self, capacity: int) -> Selector:
        """A fresh uniform selector."""
        return _UniformSelector(capacity)

    def config(self) -> dict[str, Any]:
        """``{"type": "Uniform"}``."""
        return {"type": "Uniform"}


@dataclasses.dataclass(frozen=True)
class Fifo(Sampler):
    """Always returns the oldest present item (probability 1), deterministically.

    With ``max_times_sampled=1`` this makes the table a queue.
    """

    def make_selector(self, capacity: int) -> Selector:
        """A fresh FIFO selector."""
        return _FifoSelector()

    def config(self) -> dict[str, Any]:
        """``{"type": "Fifo"}``."""
        return {"type": "Fifo"}


@dataclasses.dataclass(frozen=True)
class Prioritized(Sampler):
    """Samples item i with probability p_i^a / sum_j p_j^a (a = ``priority_exponent``).

    Backed by a sum-tree. If every present item has priority 0, samples uniformly.
    """

    priority_exponent: float

    def __post_init__(self) -> None:
        e = float(self.priority_exponent)
        if not (math.isfinite(e) and e >= 0):
            raise ValueError(f"priority_exponent must be finite and >= 0, got {e}")
        object.__setattr__(self, "priority_exponent", e)

    def make_selector(self, capacity: int) -> Selector:
        """A fresh sum-tree selector."""
        return _PrioritizedSelector(capacity, self.priority_exponent)

    def config(self) -> dict[str, Any]:
        """``{"type": "Prioritized", "priority_exponent": a}``."""
        return {"type": "Prioritized", "priority_exponent": self.priority_exponent}

    def check_priorities(self, priorities: np.ndarray) -> None:
        """Rejects priorities whose p**exponent overflows to inf."""
        if self.priority_exponent <= 1.0:
            return  # finite p >= 0 stays finite
        with np.errstate(over="ignore"):
            transformed = np.power(priorities, self.priority_exponent)
        if not np.isfinite(transformed).all():
            raise ValueError(
                f"priority ** priority_exponent ({self.priority_exponent}) overflows for "
                f"priority {priorities[~np.isfinite(transformed)][0]!r}"
            )


def sampler_from_config(config: Mapping[str, Any]) -> Sampler:
    """Rebuilds a sampler from ``Sampler.config()``."""
    kind = config.get("type")
    if kind == "Uniform":
        return Uniform()
    if kind == "Fifo":
        return Fifo()
    if kind == "Prioritized":
        return Prioritized(float(config["priority_exponent"]))
    raise ValueError(f"unknown sampler config {dict(config)!r}")


def importance_weights(
    probabilities: np.ndarray, table_size: int, beta: float
) -> np.ndarray:
    """Prioritized-replay importance weights ``(N * P(i)) ** -beta / max_j (N * P(j)) ** -beta``.

    ``probabilities`` are the per-item sampling probabilities returned with a sample and
    ``table_size`` (N) the table size at sample time. Normalising by the max keeps every weight in
    (0, 1], so they only ever scale updates down (Schaul et al., 2016). Returns float64.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    if table_size < 1:
        raise ValueError(f"table_size must be >= 1, got {table_size}")
    if not (math.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta must be finite and >= 0, got {beta}")
    if p.size == 0:
        return p.copy()
    if not (np.isfinite(p).all() and (p > 0).all() and (p <= 1).all()):
        raise ValueError("probabilities must be in (0, 1]")
    # log-space so tiny probabilities with large N do not overflow before normalising.
    log_w = -beta * np.log(table_size * p)
    return np.exp(log_w - log_w.max())
