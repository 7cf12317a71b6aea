"""A Reverb-style replay table in plain numpy: samplers, FIFO eviction, rate limiters,
checkpoints."""

from __future__ import annotations

import collections
import json
import math
import os
import threading
import time
import types
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from actorq.replay.errors import RateLimiterTimeout, TableClosedError
from actorq.replay.frames import DenseColumn, FramePool, FrameStackColumn, stack_frames
from actorq.replay.rate_limiters import RateLimiter, rate_limiter_from_config
from actorq.replay.samplers import Sampler, _FifoSelector, sampler_from_config
from actorq.replay.specs import ArraySpec, validate_batch, validate_item, validate_priorities

_FORMAT = "actorq.replay.Table"
# 2: frame-stack fields are saved as frame ids plus the distinct frames; 1 (dense fields only)
# still restores.
_FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)
_ITEMS_FILE = "items.npz"
_META_FILE = "meta.json"
# "Could this many be inserted?" answers True only for limiters that never block inserts.
_UNBOUNDED_INSERTS = 1 << 60


class SampleBatch(NamedTuple):
    """A sampled batch; row i of every array describes the i-th sampled item."""

    keys: np.ndarray  # int64 [batch]
    probabilities: np.ndarray  # float64 [batch], sampling probability when drawn
    data: dict[str, np.ndarray]  # each field stacked [batch, ...]
    priorities: np.ndarray  # float64 [batch], the item's priority when drawn
    table_size: int  # items in the table when the batch was admitted (for importance weights)


class _ClassOrInstanceMethod:
    """``Table.restore(dir)`` builds a new table; ``table.restore(dir)`` loads in place."""

    def __init__(self, on_class: Callable[..., Any], on_instance: Callable[..., Any]) -> None:
        self._on_class = on_class
        self._on_instance = on_instance
        self.__doc__ = on_class.__doc__

    def __get__(self, obj: Any, objtype: type | None = None) -> Callable[..., Any]:
        if obj is None:
            return types.MethodType(self._on_class, objtype)
        return types.MethodType(self._on_instance, obj)


def _occurrence_index(slots: np.ndarray) -> np.ndarray:
    """1-based count of each element among the elements up to and including it."""
    n = slots.size
    order = np.argsort(slots, kind="stable")
    s = slots[order]
    starts = np.ones(n, dtype=bool)
    starts[1:] = s[1:] != s[:-1]
    group_start = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    occ = np.empty(n, dtype=np.int64)
    occ[order] = np.arange(n) - group_start + 1
    return occ


def _atomic_write(path: str, write: Callable[[Any], None]) -> None:
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


class Table:
    """A replay table with Reverb's semantics (without Reverb).

    Items are flat ``dict[str, np.ndarray]`` matching ``signature`` exactly. Storage is one
    preallocated array per field, indexed by slot; freed slots go to a free list so arbitrary
    removals (``max_times_sampled``) keep storage, sampler and counters consistent.

    * ``sampler`` picks items (Uniform, Fifo, Prioritized).
    * Inserting into a full table evicts the oldest item (Reverb's FIFO remover).
    * ``max_times_sampled=n>0`` removes an item once it has been sampled n times (never more,
      even within one batch: Reverb samples item by item).
    * ``rate_limiter`` blocks inserts/samples (see ``actorq.replay.rate_limiters``); blocked calls
      wait up to ``timeout`` seconds (None: until the limiter or ``close()`` releases them).
    * ``frame_stacks`` names fields whose last axis stacks frames (Atari's ``[84, 84, 4]``
      observation and next observation). They go in and come out whole, but each distinct frame
      is stored once, shared by every stack and item that holds it (``actorq.replay.frames``).

    Every method is thread-safe (one lock + condition variable).
    """

    def __init__(
        self,
        name: str,
        max_size: int,
        signature: Mapping[str, ArraySpec],
        sampler: Sampler,
        rate_limiter: RateLimiter,
        max_times_sampled: int = 0,
        seed: int | None = None,
        frame_stacks: Sequence[str] = (),
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        if int(max_size) != max_size or max_size < 1:
            raise ValueError(f"table {name!r}: max_size must be an int >= 1, got {max_size}")
        if not signature:
            raise ValueError(f"table {name!r}: signature must have at least one field")
        for field, spec in signature.items():
            if not isinstance(field, str) or not isinstance(spec, ArraySpec):
                raise TypeError(
                    f"table {name!r}: signature must map str -> ArraySpec, got "
                    f"{field!r}: {type(spec).__name__}"
                )
        if not isinstance(sampler, Sampler):
            raise TypeError(f"table {name!r}: sampler must be a Sampler, got {sampler!r}")
        if not isinstance(rate_limiter, RateLimiter):
            raise TypeError(
                f"table {name!r}: rate_limiter must be a RateLimiter, got {rate_limiter!r}"
            )
        if int(max_times_sampled) != max_times_sampled or max_times_sampled < 0:
            raise ValueError(
                f"table {name!r}: max_times_sampled must be an int >= 0, got {max_times_sampled}"
            )
        if rate_limiter.min_size_to_sample > max_size:
            raise ValueError(
                f"table {name!r}: rate limiter min_size_to_sample "
                f"({rate_limiter.min_size_to_sample}) exceeds max_size ({max_size}); sampling "
                "could never start"
            )
        frame_stacks = tuple(frame_stacks)
        unknown = sorted(set(frame_stacks) - set(signature))
        if unknown:
            raise ValueError(f"table {name!r}: frame_stacks names fields not in the signature: "
                             f"{unknown}; fields: {sorted(signature)}")
        frames = {(signature[f].shape[:-1], signature[f].dtype) for f in frame_stacks}
        if len(frames) > 1 or any(len(signature[f].shape) < 2 for f in frame_stacks):
            raise ValueError(f"table {name!r}: frame_stacks fields must be [*frame, stack] with "
                             "one frame shape and dtype, got "
                             + ", ".join(f"{f}: {signature[f]}" for f in frame_stacks))
        self._name = name
        self._max_size = int(max_size)
        self._signature: dict[str, ArraySpec] = dict(signature)
        self._frame_stacks = frame_stacks
        self._sampler = sampler
        self._rate_limiter = rate_limiter
        self._max_times_sampled = int(max_times_sampled)
        self._rng = np.random.default_rng(seed)
        self._cond = threading.Condition(threading.Lock())
        self._closed = False
        self._frames = FramePool(*frames.pop()) if frames else None
        self._columns: dict[str, DenseColumn | FrameStackColumn] = {
            f: (FrameStackColumn(s, self._max_size, self._frames) if f in frame_stacks
                else DenseColumn(s, self._max_size))
            for f, s in self._signature.items()
        }
        self._slot_key = np.full(self._max_size, -1, dtype=np.int64)
        self._priority = np.zeros(self._max_size, dtype=np.float64)
        self._times_sampled = np.zeros(self._max_size, dtype=np.int64)
        self._selector = sampler.make_selector(self._max_size)
        self._reset_state()

    def _reset_state(self) -> None:
        if self._frames is not None:
            self._frames.clear()
        self._slot_key.fill(-1)
        self._priority.fill(0.0)
        self._times_sampled.fill(0)
        self._selector.clear()
        # key -> slot, in insertion order: the removers and checkpoints need the order.
        self._order: collections.OrderedDict[int, int] = collections.OrderedDict()
        self._free: list[int] = list(range(self._max_size - 1, -1, -1))
        self._num_inserts = 0
        self._num_samples = 0
        self._num_deletes = 0
        self._next_key = 0
        # Sum over items of (max_times_sampled - times_sampled): samples left before all expire.
        self._allowance = 0

    @property
    def name(self) -> str:
        """Table name."""
        return self._name

    @property
    def max_size(self) -> int:
        """Capacity in items."""
        return self._max_size

    @property
    def signature(self) -> dict[str, ArraySpec]:
        """Field name -> ArraySpec (a copy)."""
        return dict(self._signature)

    @property
    def sampler(self) -> Sampler:
        """The sampler config."""
        return self._sampler

    @property
    def rate_limiter(self) -> RateLimiter:
        """The rate limiter config."""
        return self._rate_limiter

    @property
    def max_times_sampled(self) -> int:
        """Items are removed after this many samples (0: never)."""
        return self._max_times_sampled

    @property
    def frame_stacks(self) -> tuple[str, ...]:
        """Fields stored as shared frames."""
        return self._frame_stacks

    @property
    def size(self) -> int:
        """Number of items currently stored."""
        with self._cond:
            return len(self._order)

    def __len__(self) -> int:
        return self.size

    @property
    def num_inserts(self) -> int:
        """Items inserted, all time."""
        with self._cond:
            return self._num_inserts

    @property
    def num_samples(self) -> int:
        """Items sampled (batch rows), all time."""
        with self._cond:
            return self._num_samples

    @property
    def num_deletes(self) -> int:
        """Items removed (evicted or expired by max_times_sampled), all time."""
        with self._cond:
            return self._num_deletes

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        with self._cond:
            return self._closed

    # ------------------------------------------------------------------------ non-blocking API

    def can_insert(self, n: int = 1) -> bool:
        """Whether inserting n items now would not block."""
        with self._cond:
            return not self._closed and self._can_insert_locked(n)

    def can_sample(self, batch_size: int = 1) -> bool:
        """Whether sampling a batch of ``batch_size`` now would not block."""
        with self._cond:
            return not self._closed and self._can_sample_locked(batch_size)

    def admitted_inserts(self) -> float:
        """All-time inserts the rate limiter admits right now: ``num_inserts`` plus the largest
        batch that could be inserted without blocking (``inf`` when inserts never block).

        Remote inserters use it as a credit: an actor may produce experience while the items it
        and the others have produced stay below this count, and waits otherwise. That is the
        table's own rule applied before the items travel, so no channel fills up with items the
        table would refuse.
        """
        with self._cond:
            if self._rate_limiter.can_insert(len(self._order), self._num_inserts,
                                             self._num_samples, _UNBOUNDED_INSERTS):
                return math.inf
            return float(self._num_inserts + self._rate_limiter.max_insertable(
                len(self._order), self._num_inserts, self._num_samples, _UNBOUNDED_INSERTS))

    def _can_insert_locked(self, n: int) -> bool:
        return self._rate_limiter.can_insert(len(self._order), self._num_inserts,
                                             self._num_samples, n)

    def _can_sample_locked(self, n: int) -> bool:
        size = len(self._order)
        if size == 0 or not self._rate_limiter.can_sample(size, self._num_inserts,
                                                          self._num_samples, n):
            return False
        # A batch is drawn without waiting in between, so it needs n samples left in the table.
        return self._max_times_sampled == 0 or self._allowance >= n

    # --------------------------------------------------------------------------------- waiting

    @staticmethod
    def _deadline(timeout: float | None) -> float | None:
        if timeout is None:
            return None
        if not (timeout >= 0):
            raise ValueError(f"timeout must be None or >= 0, got {timeout}")
        return time.monotonic() + timeout

    def _wait(
        self, ready: Callable[[], bool], deadline: float | None, what: str,
        inserted_keys: Sequence[int] = (),
    ) -> None:
        """Waits (lock held) until ready(); raises on close() or after the deadline."""
        while True:
            if self._closed:
                raise TableClosedError(f"table {self._name!r} is closed ({what})", inserted_keys)
            if ready():
                return
            if deadline is None:
                self._cond.wait()
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RateLimiterTimeout(
                    f"table {self._name!r}: {what} timed out waiting for the rate limiter "
                    f"{self._rate_limiter!r} (size={len(self._order)}, "
                    f"num_inserts={self._num_inserts}, num_samples={self._num_samples})",
                    inserted_keys,
                )
            self._cond.wait(remaining)

    # ---------------------------------------------------------------------------------- insert

    def insert(
        self, item: Mapping[str, Any], priority: float = 1.0, timeout: float | None = None
    ) -> int:
        """Inserts one item and returns its key; blocks while the rate limiter says so.

        Raises ValueError (table unchanged) if the item's fields/shapes/dtypes differ from the
        signature, a float field holds nan/inf, or the priority is not finite and >= 0.
        Raises RateLimiterTimeout after ``timeout`` seconds, TableClosedError on close().
        """
        arrays = validate_item(self._name, self._signature, item)
        p = validate_priorities(self._name, [priority], 1)
        self._sampler.check_priorities(p)
        deadline = self._deadline(timeout)
        rows = {f: a[None] for f, a in arrays.items()}  # views, no copy
        with self._cond:
            self._wait(lambda: self._can_insert_locked(1), deadline, "insert")
            keys = self._insert_rows_locked(rows, p)
            self._cond.notify_all()
        return keys[0]

    def insert_batch(
        self,
        items: Mapping[str, Any],
        priorities: Sequence[float] | np.ndarray | None = None,
        timeout: float | None = None,
    ) -> list[int]:
        """Inserts a batch (every field has a leading batch dimension); returns the keys.

        Validation is all-or-nothing: any bad element (or priority) raises ValueError naming the
        field and element, and nothing is inserted. Rate limiting is per item, as in Reverb: items
        enter as the limiter admits them, so a RateLimiterTimeout/TableClosedError can leave a
        prefix of the batch inserted (its keys are on the exception's ``inserted_keys``).
        """
        arrays, n = validate_batch(self._name, self._signature, items)
        p = validate_priorities(self._name, np.ones(n) if priorities is None else priorities, n)
        self._sampler.check_priorities(p)
        deadline = self._deadline(timeout)
        keys: list[int] = []
        with self._cond:
            while len(keys) < n:
                self._wait(lambda: self._can_insert_locked(1), deadline, "insert_batch", keys)
                k = self._rate_limiter.max_insertable(
                    len(self._order), self._num_inserts, self._num_samples, n - len(keys)
                )
                lo, hi = len(keys), len(keys) + k
                keys += self._insert_rows_locked({f: a[lo:hi] for f, a in arrays.items()},
                                                 p[lo:hi])
                self._cond.notify_all()
        return keys

    def _insert_rows_locked(self, rows: dict[str, np.ndarray], priorities: np.ndarray) -> list[int]:
        k = len(priorities)
        if k > self._max_size:
            # Later rows evict earlier rows of the same batch: go one by one to keep it simple.
            keys: list[int] = []
            for i in range(k):
                keys += self._insert_rows_locked({f: a[i : i + 1] for f, a in rows.items()},
                                                 priorities[i : i + 1])
            return keys
        for _ in range(max(0, len(self._order) + k - self._max_size)):
            self._remove_slot_locked(self._pick_eviction_locked())
        if k == 1:
            # Single items (the adder path): scalar indexing is several times cheaper.
            slot, key = self._free.pop(), self._next_key
            for f, a in rows.items():
                self._columns[f].write_one(slot, a[0])
            self._slot_key[slot] = key
            self._priority[slot] = priorities[0]
            self._times_sampled[slot] = 0
            self._order[key] = slot
            self._selector.insert(np.array([slot], dtype=np.int64), priorities)
            self._next_key += 1
            self._num_inserts += 1
            self._allowance += self._max_times_sampled
            return [key]
        slots = np.array([self._free.pop() for _ in range(k)], dtype=np.int64)
        for f, a in rows.items():
            self._columns[f].write(slots, a)
        keys = list(range(self._next_key, self._next_key + k))
        self._slot_key[slots] = keys
        self._priority[slots] = priorities
        self._times_sampled[slots] = 0
        for key, slot in zip(keys, slots.tolist()):
            self._order[key] = slot
        self._selector.insert(slots, priorities)
        self._next_key += k
        self._num_inserts += k
        self._allowance += k * self._max_times_sampled
        return keys

    def _pick_eviction_locked(self) -> int:
        key = next(iter(self._order))  # the oldest
        return self._order[key]

    def _remove_slot_locked(self, slot: int) -> None:
        key = int(self._slot_key[slot])
        del self._order[key]
        self._selector.delete(slot)
        for column in self._columns.values():
            column.release(slot)
        if self._max_times_sampled:
            self._allowance -= self._max_times_sampled - int(self._times_sampled[slot])
        self._slot_key[slot] = -1
        self._priority[slot] = 0.0
        self._times_sampled[slot] = 0
        self._free.append(slot)
        self._num_deletes += 1

    # ---------------------------------------------------------------------------------- sample

    def sample(self, batch_size: int, timeout: float | None = None) -> SampleBatch:
        """Samples ``batch_size`` items with replacement; blocks while the rate limiter says so.

        The whole batch is admitted at once (``can_sample(batch_size)``) and drawn under the lock.
        With ``max_times_sampled`` an item is removed as soon as it reaches the limit, so it
        cannot appear more often than its remaining allowance even within one batch.
        Raises ValueError if no state of the table could ever admit the batch,
        RateLimiterTimeout after ``timeout`` seconds, TableClosedError on close().
        """
        if int(batch_size) != batch_size or batch_size < 1:
            raise ValueError(f"table {self._name!r}: batch_size must be an int >= 1, "
                             f"got {batch_size}")
        batch_size = int(batch_size)
        bound = self._rate_limiter.max_sample_batch()
        if batch_size > bound:
            raise ValueError(
                f"table {self._name!r}: batch_size {batch_size} can deadlock with "
                f"{self._rate_limiter!r} (at most {bound} is always reachable); widen "
                "error_buffer or sample smaller batches"
            )
        if self._max_times_sampled and batch_size > self._max_size * self._max_times_sampled:
            raise ValueError(
                f"table {self._name!r}: batch_size {batch_size} exceeds max_size * "
                f"max_times_sampled = {self._max_size * self._max_times_sampled}"
            )
        deadline = self._deadline(timeout)
        with self._cond:
            self._wait(lambda: self._can_sample_locked(batch_size), deadline, "sample")
            batch = self._draw_locked(batch_size)
            self._cond.notify_all()
        return batch

    def _draw_locked(self, n: int) -> SampleBatch:
        table_size = len(self._order)
        mts = self._max_times_sampled
        # No insert can run while we hold the lock, so slots removed during the draw keep their
        # data until the single gather at the end; keys/priorities are captured per round since
        # removal resets them.
        rounds: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        remaining = n
        fifo = self._selector if isinstance(self._selector, _FifoSelector) else None
        while remaining:
            if fifo is not None and mts:
                # Fifo is deterministic: take the oldest item up to its remaining allowance.
                slot = fifo.oldest()
                take = min(remaining, mts - int(self._times_sampled[slot]))
                slots, probs = np.full(take, slot, dtype=np.int64), np.ones(take)
            else:
                slots, probs = self._selector.sample(self._rng, remaining)
                if mts:
                    # Draws are i.i.d. until some item hits its limit; keep that prefix (a
                    # stopping time, so exactly Reverb's item-by-item law), remove the item,
                    # redraw the rest.
                    hit = self._times_sampled[slots] + _occurrence_index(slots) >= mts
                    if hit.any():
                        cut = int(np.argmax(hit)) + 1
                        slots, probs = slots[:cut], probs[:cut]
            rounds.append((slots, self._slot_key[slots], probs, self._priority[slots]))
            np.add.at(self._times_sampled, slots, 1)
            self._num_samples += len(slots)
            remaining -= len(slots)
            if mts:
                self._allowance -= len(slots)
                last = int(slots[-1])
                if self._times_sampled[last] >= mts:
                    self._remove_slot_locked(last)
        if len(rounds) == 1:
            slots, keys, probs, prios = rounds[0]
        else:
            slots, keys, probs, prios = (np.concatenate(parts) for parts in zip(*rounds))
        return SampleBatch(
            keys=keys.astype(np.int64, copy=False),
            probabilities=probs.astype(np.float64, copy=False),
            data={f: column.read(slots) for f, column in self._columns.items()},
            priorities=prios,
            table_size=table_size,
        )

    # ------------------------------------------------------------------------------ priorities

    def update_priorities(
        self, keys: Sequence[int] | np.ndarray, priorities: Sequence[float] | np.ndarray
    ) -> None:
        """Sets the priorities of ``keys``; keys no longer in the table are ignored.

        All-or-nothing: a non-finite or negative priority raises ValueError before any change.
        With duplicate keys the last priority wins.
        """
        k = np.asarray(keys, dtype=np.int64).reshape(-1)
        p = validate_priorities(self._name, priorities, k.size)
        self._sampler.check_priorities(p)
        with self._cond:
            pairs = [(self._order.get(key), pr) for key, pr in zip(k.tolist(), p.tolist())]
            present = [(s, pr) for s, pr in pairs if s is not None]
            if not present:
                return
            slots = np.array([s for s, _ in present], dtype=np.int64)
            prios = np.array([pr for _, pr in present], dtype=np.float64)
            # Duplicate keys: the last priority wins (fancy assignment order is unspecified).
            _, last_rev = np.unique(slots[::-1], return_index=True)
            keep = slots.size - 1 - last_rev
            self._priority[slots[keep]] = prios[keep]
            self._selector.update(slots[keep], prios[keep])

    # ------------------------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Closes the table: blocked and future inserts/samples raise TableClosedError.

        Reads (size, info, save) keep working.
        """
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def info(self) -> dict[str, Any]:
        """A JSON-serialisable summary: sizes, counters, configs, signature."""
        with self._cond:
            return {
                "name": self._name,
                "max_size": self._max_size,
                "size": len(self._order),
                "num_inserts": self._num_inserts,
                "num_samples": self._num_samples,
                "num_deletes": self._num_deletes,
                "max_times_sampled": self._max_times_sampled,
                "remover": "fifo",
                "sampler": self._sampler.config(),
                "rate_limiter": self._rate_limiter.config(),
                "signature": {f: s.to_json() for f, s in self._signature.items()},
                "closed": self._closed,
                **self._frame_info_locked(),
            }

    def _frame_info_locked(self) -> dict[str, Any]:
        if self._frames is None:
            return {}
        stacks = len(self._order) * sum(self._signature[f].shape[-1] for f in self._frame_stacks)
        return {"frame_stacks": list(self._frame_stacks), "stored_frames": self._frames.live,
                "stacked_frames": stacks,
                "frame_bytes": self._frames.live * self._frames.frame_bytes}

    def peek(self, n: int, seed: int = 0) -> dict[str, np.ndarray]:
        """Up to ``n`` items drawn uniformly without replacement, for monitoring: not a sample
        (no rate limiting, no ``times_sampled``, no removal, ``num_samples`` unchanged)."""
        with self._cond:
            slots = np.array(list(self._order.values()), dtype=np.int64)
            if len(slots) > n:
                slots = np.sort(np.random.default_rng(seed).choice(slots, n, replace=False))
            return {f: column.read(slots).copy() for f, column in self._columns.items()}

    def snapshot(self) -> dict[str, Any]:
        """A consistent copy of the contents, in insertion order (for inspection and tests).

        Returns ``{"keys": int64[n], "priorities": float64[n], "times_sampled": int64[n],
        "data": {field: [n, ...]}}``.
        """
        with self._cond:
            slots = np.array(list(self._order.values()), dtype=np.int64)
            return {
                "keys": self._slot_key[slots].copy(),
                "priorities": self._priority[slots].copy(),
                "times_sampled": self._times_sampled[slots].copy(),
                "data": {f: column.read(slots) for f, column in self._columns.items()},
            }

    def __repr__(self) -> str:
        return (f"Table(name={self._name!r}, max_size={self._max_size}, size={self.size}, "
                f"sampler={self._sampler!r}, rate_limiter={self._rate_limiter!r})")

    # ------------------------------------------------------------------------ save and restore

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Writes contents and metadata to ``directory`` (``items.npz`` + ``meta.json``).

        Each file is written to a temporary name and renamed into place; ``meta.json`` goes last
        and names the ``items.npz`` it belongs to (a random checkpoint id stored in both), so a
        crash mid-save leaves either the previous checkpoint or a detectably inconsistent pair,
        never silently mixed data. No pickle: arrays via np.savez(allow_pickle=False), JSON meta.
        """
        directory = os.fspath(directory)
        with self._cond:
            keys = list(self._order.keys())
            slots = np.array(list(self._order.values()), dtype=np.int64)
            arrays = {f"field_{i}": column.read(slots)
                      for i, (f, column) in enumerate(self._columns.items())
                      if f not in self._frame_stacks}
            if self._frames is not None:
                # The distinct frames of the items, once, and each stack as indices into them.
                ids = {f: self._columns[f].ids(slots) for f in self._frame_stacks}
                used = np.unique(np.concatenate([i.reshape(-1) for i in ids.values()]))
                arrays["frames"] = self._frames.gather(used)
                for i, f in enumerate(self._columns):
                    if f in ids:
                        arrays[f"field_{i}"] = np.searchsorted(used, ids[f])
            meta: dict[str, Any] = {
                "format": _FORMAT,
                "version": _FORMAT_VERSION,
                "name": self._name,
                "max_size": self._max_size,
                "max_times_sampled": self._max_times_sampled,
                "remover": "fifo",  # kept in the format: Reverb's name for the eviction rule
                "signature": {f: s.to_json() for f, s in self._signature.items()},
                "fields": {f"field_{i}": f for i, f in enumerate(self._columns)},
                "frame_stacks": list(self._frame_stacks),
                # Items in insertion order ("order"); the arrays below are aligned with it.
                "keys": keys,
                "slots": slots.tolist(),
                "priorities": self._priority[slots].tolist(),
                "times_sampled": self._times_sampled[slots].tolist(),
                "free_slots": list(self._free),
                "counters": {
                    "num_inserts": self._num_inserts,
                    "num_samples": self._num_samples,
                    "num_deletes": self._num_deletes,
                    "next_key": self._next_key,
                },
                "sampler": self._sampler.config(),
                "rate_limiter": self._rate_limiter.config(),
            }
        checkpoint_id = uuid.uuid4().hex
        meta["checkpoint_id"] = checkpoint_id
        arrays["checkpoint_id"] = np.array(checkpoint_id)
        os.makedirs(directory, exist_ok=True)
        _atomic_write(os.path.join(directory, _ITEMS_FILE),
                      lambda f: np.savez(f, allow_pickle=False, **arrays))
        # json writes floats with repr(), which round-trips float64 exactly.
        _atomic_write(os.path.join(directory, _META_FILE),
                      lambda f: f.write(json.dumps(meta, allow_nan=False).encode()))

    @staticmethod
    def _read_checkpoint(directory: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        with open(os.path.join(directory, _META_FILE), encoding="utf-8") as f:
            meta = json.load(f)
        if meta.get("format") != _FORMAT or meta.get("version") not in _READABLE_VERSIONS:
            raise ValueError(f"{directory}: not an {_FORMAT} checkpoint of version "
                             f"{' or '.join(map(str, _READABLE_VERSIONS))}")
        with np.load(os.path.join(directory, _ITEMS_FILE), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
        if str(arrays.pop("checkpoint_id", "")) != meta["checkpoint_id"]:
            raise ValueError(f"{directory}: {_ITEMS_FILE} and {_META_FILE} are from different "
                             "saves (interrupted save?)")
        return meta, arrays

    def _restore_into(self, directory: str | os.PathLike[str]) -> Table:
        """Replaces this table's contents and counters with the checkpoint in ``directory``.

        The checkpoint's signature must equal this table's (else ValueError, table unchanged).
        This table's sampler, rate limiter and remover are kept; priorities, times_sampled,
        insertion order, keys and counters come from the checkpoint. Returns self.
        """
        directory = os.fspath(directory)
        meta, arrays = self._read_checkpoint(directory)
        saved_sig = {f: ArraySpec.from_json(s) for f, s in meta["signature"].items()}
        if saved_sig != self._signature:
            diffs = [
                f"{f!r}: checkpoint {saved_sig.get(f)}, table {self._signature.get(f)}"
                for f in sorted(set(saved_sig) | set(self._signature))
                if saved_sig.get(f) != self._signature.get(f)
            ]
            raise ValueError(
                f"table {self._name!r}: checkpoint signature does not match: " + "; ".join(diffs)
            )
        keys = np.asarray(meta["keys"], dtype=np.int64)
        n = keys.size
        prios = validate_priorities(self._name, meta["priorities"], n)
        self._sampler.check_priorities(prios)
        times = np.asarray(meta["times_sampled"], dtype=np.int64).reshape(-1)
        counters = {k: int(v) for k, v in meta["counters"].items()}
        data = {f: arrays[name] for name, f in meta["fields"].items()}
        problems = []
        if n > self._max_size:
            problems.append(f"{n} items exceed max_size {self._max_size}")
        if times.shape != (n,) or (times < 0).any():
            problems.append("bad times_sampled")
        if self._max_times_sampled and (times >= self._max_times_sampled).any():
            problems.append(f"items already sampled >= max_times_sampled "
                            f"({self._max_times_sampled})")
        if np.unique(keys).size != n or (n and (keys.min() < 0 or keys.max() >=
                                               counters["next_key"])):
            problems.append("bad keys")
        if counters["num_inserts"] - counters["num_deletes"] != n:
            problems.append("counters inconsistent with size")
        saved_frames = arrays.get("frames")
        saved_stacks = set(meta.get("frame_stacks", ()))
        for f, spec in self._signature.items():
            if f not in data:
                problems.append(f"no data for field {f!r}")
            elif f in saved_stacks:
                ids = data[f]
                if (saved_frames is None or saved_frames.shape[1:] != spec.shape[:-1]
                        or saved_frames.dtype != spec.dtype or ids.shape != (n, spec.shape[-1])
                        or ids.dtype.kind not in "iu"
                        or (ids.size and not 0 <= ids.min() <= ids.max() < len(saved_frames))):
                    problems.append(f"bad frames for field {f!r}")
            elif data[f].shape != (n, *spec.shape) or data[f].dtype != spec.dtype:
                problems.append(f"bad data for field {f!r}")
        if problems:
            raise ValueError(f"{directory}: invalid checkpoint: " + "; ".join(problems))
        slots = np.asarray(meta["slots"], dtype=np.int64)
        free = [int(s) for s in meta["free_slots"]]
        if meta["max_size"] != self._max_size or sorted(slots.tolist() + free) != list(
            range(self._max_size)
        ):
            # Different capacity: pack items into the first slots instead.
            slots = np.arange(n, dtype=np.int64)
            free = list(range(self._max_size - 1, n - 1, -1))
        with self._cond:
            self._reset_state()
            pool_ids = None
            if saved_frames is not None and self._frames is not None:
                pool_ids = np.array([self._frames.add(frame) for frame in saved_frames],
                                    dtype=np.int64)
            for f, column in self._columns.items():
                if f not in saved_stacks:
                    column.write(slots, data[f])
                elif isinstance(column, FrameStackColumn) and pool_ids is not None:
                    column.write_ids(slots, pool_ids[data[f]])
                else:
                    column.write(slots, stack_frames(saved_frames[data[f]]))
            if pool_ids is not None:
                self._frames.release(pool_ids)  # the items hold their own references now
            self._slot_key[slots] = keys
            self._priority[slots] = prios
            self._times_sampled[slots] = times
            for key, slot in zip(keys.tolist(), slots.tolist()):
                self._order[key] = slot
            self._free = free
            self._selector.insert(slots, prios)
            self._num_inserts = counters["num_inserts"]
            self._num_samples = counters["num_samples"]
            self._num_deletes = counters["num_deletes"]
            self._next_key = counters["next_key"]
            if self._max_times_sampled:
                self._allowance = int(n * self._max_times_sampled - times.sum())
            self._cond.notify_all()
        return self

    def _restore_new(
        cls,
        directory: str | os.PathLike[str],
        *,
        name: str | None = None,
        sampler: Sampler | None = None,
        rate_limiter: RateLimiter | None = None,
        seed: int | None = None,
    ) -> Table:
        """Restores a table from ``directory``.

        ``Table.restore(directory, name=None, sampler=None, rate_limiter=None, seed=None)``
        builds a new table from the checkpoint's config (overridable by the keyword arguments);
        ``table.restore(directory)`` loads into an existing table with the same signature
        (mismatch: ValueError). Contents, priorities, times_sampled, keys, insertion order and
        the insert/sample/delete counters round-trip exactly.
        """
        meta, _ = cls._read_checkpoint(os.fspath(directory))
        table = cls(
            name=meta["name"] if name is None else name,
            max_size=int(meta["max_size"]),
            signature={f: ArraySpec.from_json(s) for f, s in meta["signature"].items()},
            sampler=sampler_from_config(meta["sampler"]) if sampler is None else sampler,
            rate_limiter=(rate_limiter_from_config(meta["rate_limiter"])
                          if rate_limiter is None else rate_limiter),
            max_times_sampled=int(meta["max_times_sampled"]),
            seed=seed,
            frame_stacks=tuple(meta.get("frame_stacks", ())),
        )
        return table._restore_into(directory)

    restore = _ClassOrInstanceMethod(_restore_new, _restore_into)


def queue_table(name: str, max_size: int, signature: Mapping[str, ArraySpec],
                seed: int | None = None) -> Table:
    """A table configured as Reverb's queue: FIFO sampler and remover, every item sampled once,
    the ``Queue(max_size)`` rate limiter (inserts block when ``max_size`` items wait, samples
    when none does). On-policy learners read their unrolls from one."""
    from actorq.replay.rate_limiters import Queue
    from actorq.replay.samplers import Fifo

    return Table(name=name, max_size=max_size, signature=signature, sampler=Fifo(),
                 rate_limiter=Queue(max_size), max_times_sampled=1, seed=seed)
