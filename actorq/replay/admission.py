"""Experience on its way into a table, admitted at the pace of the table's rate limiter.

Reverb blocks an insert at the table until its rate limiter admits it. A learner process that
receives experience from many actors cannot block the thread that receives it (episode rows,
reports and restarts come through it too), so :class:`AdmissionQueue` holds what the limiter does
not admit yet, in arrival order, and inserts it as soon as samples make room. How much can be
held is bounded upstream: actors stop producing once they are ahead of the table's admission
(see ``Table.admitted_inserts``), so the queue never grows past that slack.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping

import numpy as np

from actorq.replay.errors import RateLimiterTimeout
from actorq.replay.table import Table


class AdmissionQueue:
    """Inserts chunks of items into ``table`` as its rate limiter admits them; never blocks.

    ``put`` may be called from any thread; ``drain`` is called by whoever samples (after each
    learner step) to move waiting items in once the limiter has room.
    """

    def __init__(self, table: Table) -> None:
        self._table = table
        self._waiting: collections.deque[dict[str, np.ndarray]] = collections.deque()
        self._lock = threading.Lock()
        self._waiting_items = 0
        self.items_received = 0  # valid items put, admitted or waiting

    @property
    def waiting_items(self) -> int:
        """Items received but not yet admitted by the table."""
        return self._waiting_items

    def put(self, chunk: Mapping[str, np.ndarray]) -> int:
        """Queues ``chunk`` (fields with a leading batch dimension) behind anything waiting and
        inserts what the table admits now; returns the number of items inserted by this call."""
        rows = {field: np.asarray(value) for field, value in chunk.items()}
        n = len(next(iter(rows.values()))) if rows else 0
        if n == 0:
            return 0
        with self._lock:
            self._waiting.append(rows)
            self._waiting_items += n
            self.items_received += n
            return self._drain_locked()

    def put_item(self, item: Mapping[str, np.ndarray]) -> int:
        """:meth:`put` for one item (fields without the batch dimension); copies it, since an
        item that must wait outlives the caller's arrays."""
        return self.put({field: np.array(value)[None] for field, value in item.items()})

    def drain(self) -> int:
        """Inserts waiting items while the table admits them; returns how many went in."""
        with self._lock:
            return self._drain_locked()

    def _drain_locked(self) -> int:
        inserted = 0
        while self._waiting:
            rows = self._waiting[0]
            n = len(next(iter(rows.values())))
            try:
                self._table.insert_batch(rows, timeout=0.0)
            except ValueError:
                self._waiting.popleft()  # a malformed chunk must not block the ones behind it
                self._waiting_items -= n
                self.items_received -= n
                raise
            except RateLimiterTimeout as full:
                k = len(full.inserted_keys)
                if k:
                    self._waiting[0] = {field: value[k:] for field, value in rows.items()}
                inserted += k
                self._waiting_items -= k
                return inserted
            self._waiting.popleft()
            inserted += n
            self._waiting_items -= n
        return inserted
