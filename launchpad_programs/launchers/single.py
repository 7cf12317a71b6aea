"""The single launcher: every node of the program in this process and thread, interleaved.

After each step of the main node, each other node takes one step, in program order. Nothing runs
concurrently, so a run is reproducible from its seed, and a debugger or profiler sees every node.
When every node is idle for a few rounds in a row, no node can ever make progress again (they
all wait on each other): the launcher raises instead of spinning.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from launchpad_programs.launchers.memory import MemoryCounter, MemoryStream, MemoryVariable
from launchpad_programs.program import FINISHED, IDLE, NodeBody, Program

STALLED_ROUNDS = 3


class MemoryContext:
    """A node's context over in-memory channels."""

    def __init__(self, host: SingleHost, name: str) -> None:
        self._host = host
        self.name = name
        self.incarnation = 0
        self._created = time.time()
        self._slots = host.program.slot_of(name)

    def stream(self, channel: str) -> MemoryStream:
        stream = self._host.streams[channel]
        return stream if self.name == self._host.program.main.name else stream.sender(self.name)

    def variable(self, channel: str) -> MemoryVariable:
        return self._host.variables[channel]

    def counter(self, channel: str) -> MemoryCounter:
        counter = self._host.counters[channel]
        slot = self._slots.get(channel)
        return counter if slot is None else counter.for_slot(slot)

    def stopping(self) -> bool:
        return self._host.stopping

    def ready(self, **info: Any) -> None:
        self._host.events.append({"event": "ready", "node": self.name, "incarnation": 0,
                                  "pid": os.getpid(), "host": socket.gethostname(),
                                  "startup_s": time.time() - self._created, **info})

    def events(self) -> list[dict[str, Any]]:
        events, self._host.events = self._host.events, []
        return events

    def finished(self, names: tuple[str, ...]) -> bool:
        return all(name in self._host.finished for name in names)

    def pids(self) -> dict[str, int]:
        return {name: os.getpid() for name in self._host.program.node_names}


class SingleHost:
    """Hosts every node in this thread (see the module docstring)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.streams = {c.name: MemoryStream() for c in program.channels if c.kind == "stream"}
        self.variables = {c.name: MemoryVariable() for c in program.channels
                          if c.kind == "variable"}
        self.counters = {c.name: MemoryCounter(c) for c in program.channels
                         if c.kind == "counter"}
        self.events: list[dict[str, Any]] = []
        self.finished: set[str] = set()
        self.stopping = False
        self._bodies: dict[str, NodeBody] = {}
        self._idle_rounds = 0

    def main_context(self) -> MemoryContext:
        return MemoryContext(self, self.program.main.name)

    def start_others(self) -> None:
        for node in self.program.nodes:
            if not node.main:
                self._bodies[node.name] = node.make(MemoryContext(self, node.name),
                                                    **node.kwargs)

    def supervise(self) -> None:
        """Nothing dies on its own here: a node's error propagates at once."""

    def after_main_step(self, status: str) -> None:
        all_idle = status == IDLE
        for name, body in self._bodies.items():
            if name in self.finished:
                continue
            node_status = body.step()
            if node_status == FINISHED:
                body.close(False)
                self.finished.add(name)
            elif node_status != IDLE:
                all_idle = False
        unfinished = any(name not in self.finished for name in self._bodies)
        self._idle_rounds = self._idle_rounds + 1 if all_idle and unfinished else 0
        if self._idle_rounds >= STALLED_ROUNDS:
            raise RuntimeError(
                f"program {self.program.name!r} stalled: every node stayed idle for "
                f"{STALLED_ROUNDS} rounds, each waiting on another (unfinished: "
                f"{', '.join(n for n in self._bodies if n not in self.finished)})")

    def stop_others(self, timeout: float) -> None:
        del timeout  # nothing runs concurrently: closing is immediate
        self.stopping = True
        for name, body in self._bodies.items():
            if name not in self.finished:
                self.finished.add(name)
                body.close(True)

    def close(self) -> None:
        self._bodies.clear()
