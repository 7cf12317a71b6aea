"""Background prefetching of sampled batches."""

from __future__ import annotations

import queue
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any, Self

from actorq.replay.errors import RateLimiterTimeout
from actorq.replay.table import SampleBatch, Table

# How often the worker re-checks for close() while the table or the consumer makes it wait.
_POLL_S = 0.05


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def _put(q: queue.Queue[Any], item: Any, stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            q.put(item, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False


def _worker(
    table: Table, batch_size: int, timeout: float | None, q: queue.Queue[Any],
    stop: threading.Event,
) -> None:
    # Holds no reference to the iterator, so the iterator can be garbage-collected (which stops
    # this thread via its finalizer).
    try:
        while not stop.is_set():
            deadline = None if timeout is None else time.monotonic() + timeout
            batch = None
            while batch is None and not stop.is_set():
                wait = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
                try:
                    batch = table.sample(batch_size, timeout=max(0.0, wait))
                except RateLimiterTimeout:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise RateLimiterTimeout(
                            f"table {table.name!r}: no batch of {batch_size} within "
                            f"{timeout} s"
                        ) from None
            if batch is None or not _put(q, batch, stop):
                return
    except BaseException as e:  # noqa: BLE001 - re-raised in the consumer
        _put(q, _Failure(e), stop)


def _shutdown(stop: threading.Event, q: queue.Queue[Any], thread: threading.Thread) -> None:
    stop.set()
    try:  # unblock a worker stuck in put()
        while True:
            q.get_nowait()
    except queue.Empty:
        pass
    if thread is not threading.current_thread():
        thread.join(timeout=10 * _POLL_S)


class PrefetchingIterator(Iterator[SampleBatch]):
    """Iterates over ``table.sample(batch_size)`` batches sampled ahead by a background thread.

    Up to ``num_prefetch`` batches wait in a bounded queue. ``timeout`` bounds how long one batch
    may take (None: wait as long as the table does); a RateLimiterTimeout, TableClosedError or
    any other error in the thread is re-raised by ``__next__`` (and by every later call).
    ``close()`` (also on ``with`` exit and garbage collection) stops the thread; ``__next__``
    then raises StopIteration.
    """

    def __init__(
        self,
        table: Table,
        batch_size: int,
        num_prefetch: int = 2,
        timeout: float | None = None,
    ) -> None:
        if int(batch_size) != batch_size or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size}")
        if int(num_prefetch) != num_prefetch or num_prefetch < 1:
            raise ValueError(f"num_prefetch must be an int >= 1, got {num_prefetch}")
        if timeout is not None and not timeout >= 0:
            raise ValueError(f"timeout must be None or >= 0, got {timeout}")
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=int(num_prefetch))
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=_worker,
            args=(table, int(batch_size), timeout, self._queue, self._stop),
            name=f"PrefetchingIterator[{table.name}]",
            daemon=True,
        )
        self._thread.start()
        self._finalizer = weakref.finalize(self, _shutdown, self._stop, self._queue, self._thread)

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> SampleBatch:
        """The next prefetched batch; re-raises the worker's error, StopIteration once closed."""
        while True:
            if self._error is not None:
                raise self._error
            if self._stop.is_set():
                raise StopIteration
            try:
                item = self._queue.get(timeout=_POLL_S)
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    self._stop.set()  # worker gone without a message: treat as closed
                continue
            if isinstance(item, _Failure):
                self._error = item.error
                self.close()
                raise item.error
            return item

    def close(self) -> None:
        """Stops the worker thread and drops prefetched batches; idempotent."""
        self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
