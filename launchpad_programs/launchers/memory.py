"""Channels in one process's memory: every channel of the single launcher, and the main node's
end of the streams in the local and Ray launchers (their receiver threads fill it)."""

from __future__ import annotations

import collections
import dataclasses
import threading
from typing import Any

from launchpad_programs.program import Channel


class MemoryStream:
    """A stream: messages queued in memory, in arrival order. Thread-safe."""

    def __init__(self, node: str = "") -> None:
        self._node = node
        self._messages: collections.deque[tuple[str, Any]] = collections.deque()
        self._arrived = threading.Condition()

    def sender(self, node: str) -> MemoryStream:
        """The stream as source node ``node`` sees it."""
        stream = MemoryStream(node)
        stream._messages, stream._arrived = self._messages, self._arrived
        return stream

    def send(self, message: Any) -> None:
        self.put(self._node, message)

    def put(self, source: str, message: Any) -> None:
        with self._arrived:
            self._messages.append((source, message))
            self._arrived.notify_all()

    def receive(self, timeout: float = 0.0) -> list[tuple[str, Any]]:
        with self._arrived:
            if not self._messages and timeout > 0:
                self._arrived.wait(timeout)
            out = list(self._messages)
            self._messages.clear()
        return out

    def wait(self, timeout: float) -> None:
        """Waits up to ``timeout`` seconds for a message (without taking it)."""
        with self._arrived:
            if not self._messages:
                self._arrived.wait(timeout)


class _MemoryReader:
    def __init__(self, variable: MemoryVariable, key: str) -> None:
        self._variable, self._key = variable, key

    def latest(self) -> tuple[int, bytes] | None:
        with self._variable.lock:
            return self._variable.values.get(self._key)


class MemoryVariable:
    """A variable: the newest ``(version, bytes)`` per key."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: dict[str, tuple[int, bytes]] = {}

    def publish(self, key: str, version: int, data: bytes) -> None:
        with self.lock:
            current = self.values.get(key)
            if current is None or version > current[0]:
                self.values[key] = (int(version), bytes(data))

    def reader(self, key: str) -> _MemoryReader:
        return _MemoryReader(self, key)


@dataclasses.dataclass
class _CounterState:
    max_total: int
    limit: int
    slots: list[int]
    gauges: dict[str, int]
    base: int = 0
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)


class MemoryCounter:
    """A counter held in memory (:class:`~launchpad_programs.program.Counter`). ``for_slot``
    gives a source node its own view; ``acquire`` reserves nothing, as in the local launcher."""

    def __init__(self, channel: Channel, state: _CounterState | None = None,
                 slot: int | None = None) -> None:
        self._channel = channel
        self._state = state if state is not None else _CounterState(
            max_total=int(channel.max_total), limit=int(channel.max_total),
            slots=[0] * len(channel.sources), gauges={name: 0 for name in channel.gauges})
        self._slot = slot

    def for_slot(self, slot: int) -> MemoryCounter:
        """The counter as the holder of ``slot`` sees it."""
        return MemoryCounter(self._channel, self._state, slot)

    def total(self) -> int:
        return self._state.base + sum(self._state.slots)

    def slots(self) -> list[int]:
        return list(self._state.slots)

    def acquire(self, want: int) -> int:
        state = self._state
        with state.lock:
            room = min(state.max_total, state.limit) - (state.base + sum(state.slots))
        return max(0, min(int(want), room))

    def commit(self, taken: int) -> None:
        if self._slot is None:
            raise RuntimeError(f"only the slot holders of {self._channel.name!r} commit steps")
        with self._state.lock:
            self._state.slots[self._slot] += int(taken)

    def exhausted(self) -> bool:
        return self.total() >= self._state.max_total

    def gauge(self, name: str) -> int:
        return self._state.gauges[name]

    def set_gauge(self, name: str, value: int) -> None:
        if name not in self._state.gauges:
            raise KeyError(f"no gauge {name!r}; gauges: {', '.join(self._state.gauges)}")
        self._state.gauges[name] = int(value)

    def set_limit(self, limit: int) -> None:
        self._state.limit = int(limit)

    def reset(self, base: int, slots: list[int]) -> None:
        state = self._state
        with state.lock:
            if len(slots) != len(state.slots):
                raise ValueError(f"{len(slots)} slot counts for {len(state.slots)} slots")
            state.slots[:] = [int(s) for s in slots]
            state.base = int(base) - sum(state.slots)
