"""The local launcher: the main node in this process, every other node in its own process
(Launchpad's ``local_mp``), started with ``multiprocessing``'s 'spawn'.

Channels:

* **stream**: one one-way ``Pipe`` per child process carries its messages on every stream (and
  its lifecycle events). A per-child pipe (rather than one shared queue) means a child killed
  mid-write can only corrupt its own pipe, which this process drops (EOF) when the child dies.
  A receiver thread puts the messages into the main node's in-memory streams;
* **variable**: one shared-memory segment per key (:mod:`launchpad_programs.shared_policy`,
  double-buffered with a seqlock and a CRC), created when the main node first publishes the key;
* **counter**: a shared int64 array: base, limit, gauges and one slot per source node, each
  slot written by its node alone. Nothing a child touches takes a lock, so ``kill -9`` on a
  child can never deadlock the others. ``acquire`` reserves nothing: concurrent sources may pass
  the bound by at most what the others acquired at the same moment.

Failures: a dead node with ``restart`` is started again (a new incarnation) unless the program
is stopping, it exited cleanly, or a counter it holds a slot of is exhausted; the main node gets a
``restart`` event. A node that dies three times in a row before it is ready stops the program.

Stopping: the stop flag, ``abandon_on_stop`` nodes terminated at once, the others joined for
``shutdown_timeout`` seconds, then terminated, then killed; their last messages are delivered.
Children ignore Ctrl-C (the launching process coordinates), exit on SIGTERM, and exit by
themselves when the launching process dies (their parent changes or their pipe breaks).
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Mapping
from typing import Any

from absl import logging

from launchpad_programs.launchers.main_loop import MainContext
from launchpad_programs.launchers.memory import MemoryStream
from launchpad_programs.program import FINISHED, IDLE, Channel, Node, Program

STOP = 0  # the launcher's control array
BASE, LIMIT = 0, 1  # a counter array's header; gauges, then slots follow
HEADER = 2
EVENT = "__event__"  # a lifecycle event on a child's pipe (not a stream message)
MAX_STARTUP_FAILURES = 3  # deaths in a row before a node was ever ready
IDLE_SLEEP_MAX_S = 0.005


class ArrayCounter:
    """A counter channel in a shared int64 array (see the module docstring)."""

    def __init__(self, channel: Channel, array: Any, slot: int | None = None) -> None:
        import numpy as np

        self._channel = channel
        self._view = np.ctypeslib.as_array(array)
        self._gauges = {name: HEADER + i for i, name in enumerate(channel.gauges)}
        self._first_slot = HEADER + len(channel.gauges)
        self._slots = self._view[self._first_slot:]
        self._slot = slot
        self._max = int(channel.max_total)

    @staticmethod
    def size(channel: Channel) -> int:
        return HEADER + len(channel.gauges) + len(channel.sources)

    def total(self) -> int:
        return int(self._view[BASE]) + int(self._slots.sum())

    def slots(self) -> list[int]:
        return [int(v) for v in self._slots]

    def acquire(self, want: int) -> int:
        room = min(self._max, int(self._view[LIMIT])) - self.total()
        return max(0, min(int(want), room))

    def commit(self, taken: int) -> None:
        if self._slot is None:
            raise RuntimeError(f"only the slot holders of {self._channel.name!r} commit steps")
        self._slots[self._slot] += int(taken)

    def exhausted(self) -> bool:
        return self.total() >= self._max

    def gauge(self, name: str) -> int:
        return int(self._view[self._gauges[name]])

    def set_gauge(self, name: str, value: int) -> None:
        self._view[self._gauges[name]] = int(value)

    def set_limit(self, limit: int) -> None:
        self._view[LIMIT] = int(limit)

    def reset(self, base: int, slots: list[int]) -> None:
        if len(slots) != len(self._slots):
            raise ValueError(f"{len(slots)} slot counts for {len(self._slots)} slots")
        self._slots[:] = slots
        self._view[BASE] = int(base) - sum(int(s) for s in slots)


class _PublishedVariable:
    """The main node's end of a variable channel: one shared-memory segment per key."""

    def __init__(self, name: str) -> None:
        self._name = name
        self.publishers: dict[str, Any] = {}
        self.frozen = False  # keys are fixed once the other nodes start

    def publish(self, key: str, version: int, data: bytes) -> None:
        from launchpad_programs.shared_policy import SharedPolicyPublisher

        publisher = self.publishers.get(key)
        if publisher is None:
            if self.frozen:
                raise RuntimeError(
                    f"variable {self._name!r}: key {key!r} published for the first time after "
                    "the other nodes started; publish every key while the main node is built")
            publisher = self.publishers[key] = SharedPolicyPublisher.for_package(data)
        publisher.publish(version, data)

    def reader(self, key: str) -> Any:
        from launchpad_programs.shared_policy import SharedPolicySource

        return SharedPolicySource(self.publishers[key].name, verify_crc=False)

    def close(self) -> None:
        for publisher in self.publishers.values():
            publisher.close()


class _ChildVariable:
    def __init__(self, name: str, segments: Mapping[str, str]) -> None:
        self._name, self._segments = name, segments

    def publish(self, key: str, version: int, data: bytes) -> None:
        raise RuntimeError(f"variable {self._name!r} is published by the main node only")

    def reader(self, key: str) -> Any:
        from launchpad_programs.shared_policy import SharedPolicySource

        if key not in self._segments:
            raise KeyError(f"variable {self._name!r} has no key {key!r}; published: "
                           f"{', '.join(self._segments) or 'none'}")
        # The seqlock alone guarantees whole values: a variable's bytes carry no trailer.
        return SharedPolicySource(self._segments[key], verify_crc=False)


class _ChildStream:
    def __init__(self, conn: Any, name: str) -> None:
        self._conn, self._name = conn, name

    def send(self, message: Any) -> None:
        self._conn.send((self._name, message))

    def receive(self, timeout: float = 0.0) -> list[tuple[str, Any]]:
        raise RuntimeError(f"stream {self._name!r} is received by the main node only")


@dataclasses.dataclass
class ChildSpec:
    """Everything a child process needs (pickled once, at spawn)."""

    node: Node
    channels: tuple[Channel, ...]
    slots: dict[str, int]
    stop: Any  # RawArray('q', 1)
    counters: dict[str, Any]  # channel name -> RawArray('q')
    variables: dict[str, dict[str, str]]  # channel name -> key -> shared-memory name
    conn: Any  # write end of the child's pipe
    parent_pid: int
    incarnation: int
    spawn_time: float


_CHILD_STATE = {"running": False, "stop": False}


def _child_sigterm(signum: int, frame: Any) -> None:
    del signum, frame
    _CHILD_STATE["stop"] = True
    if not _CHILD_STATE["running"]:
        raise SystemExit(0)  # still starting up: nothing to flush


class ChildContext:
    """A node's context inside its process."""

    def __init__(self, spec: ChildSpec) -> None:
        self._spec = spec
        self.name = spec.node.name
        self.incarnation = spec.incarnation
        self._channels = {c.name: c for c in spec.channels}

    def _channel(self, name: str, kind: str) -> Channel:
        channel = self._channels.get(name)
        if channel is None or channel.kind != kind:
            raise KeyError(f"node {self.name!r} has no {kind} channel {name!r}")
        return channel

    def stream(self, channel: str) -> _ChildStream:
        self._channel(channel, "stream")
        return _ChildStream(self._spec.conn, channel)

    def variable(self, channel: str) -> _ChildVariable:
        self._channel(channel, "variable")
        return _ChildVariable(channel, self._spec.variables.get(channel, {}))

    def counter(self, channel: str) -> ArrayCounter:
        return ArrayCounter(self._channel(channel, "counter"), self._spec.counters[channel],
                            self._spec.slots.get(channel))

    def stopping(self) -> bool:
        return bool(_CHILD_STATE["stop"] or self._spec.stop[STOP] != 0
                    or os.getppid() != self._spec.parent_pid)

    def ready(self, **info: Any) -> None:
        self._spec.conn.send((EVENT, {
            "event": "ready", "node": self.name, "incarnation": self.incarnation,
            "pid": os.getpid(), "host": socket.gethostname(),
            "startup_s": time.time() - self._spec.spawn_time, **info}))

    def events(self) -> list[dict[str, Any]]:
        raise RuntimeError("lifecycle events go to the main node only")

    def finished(self, names: tuple[str, ...]) -> bool:
        raise RuntimeError("only the main node watches other nodes")

    def pids(self) -> dict[str, int]:
        raise RuntimeError("only the main node knows every process")


def child_main(spec: ChildSpec) -> None:
    """Entry point of a node's process: build the node, step it until it finishes or the
    program stops, close it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the launching process coordinates Ctrl-C
    signal.signal(signal.SIGTERM, _child_sigterm)
    node = spec.node
    try:
        ctx = ChildContext(spec)
        body = node.make(ctx, **node.kwargs)
        _CHILD_STATE["running"] = True
        pause = 0.0
        while not ctx.stopping():
            status = body.step()
            if status == FINISHED:
                break
            if status == IDLE:  # waiting on another node: back off briefly
                pause = min(max(2 * pause, 0.0002), IDLE_SLEEP_MAX_S)
                time.sleep(pause)
            else:
                pause = 0.0
        if os.getppid() != spec.parent_pid:
            return  # orphaned: nobody to flush to
        body.close(ctx.stopping())
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 - report, then exit non-zero
        error = traceback.format_exc()
        print(f"{node.name} failed:\n{error}", file=sys.stderr)
        with contextlib.suppress(Exception):  # the launching process may be gone
            spec.conn.send((EVENT, {"event": "error", "node": node.name,
                                    "incarnation": spec.incarnation, "traceback": error}))
        sys.exit(1)
    finally:
        with contextlib.suppress(Exception):
            spec.conn.close()


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    """Sets ``env`` while a child is spawned, then restores ours: a spawned child re-imports the
    parent's main module before its target runs, so variables set inside it (e.g. XLA flags)
    could come too late."""
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@dataclasses.dataclass
class _Child:
    node: Node
    process: Any
    incarnation: int
    ready: bool = False
    finished: bool = False
    startup_failures: int = 0


class LocalHost:
    """Runs a program's nodes as local processes (see the module docstring)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._mp = multiprocessing.get_context("spawn")
        self._stop = self._mp.RawArray("q", 1)
        self.streams = {c.name: MemoryStream() for c in program.channels if c.kind == "stream"}
        self.variables = {c.name: _PublishedVariable(c.name) for c in program.channels
                          if c.kind == "variable"}
        self._counter_arrays = {c.name: self._mp.RawArray("q", ArrayCounter.size(c))
                                for c in program.channels if c.kind == "counter"}
        self.counters = {c.name: ArrayCounter(c, self._counter_arrays[c.name])
                         for c in program.channels if c.kind == "counter"}
        for counter, channel in zip(self.counters.values(),
                                    (c for c in program.channels if c.kind == "counter"),
                                    strict=True):
            counter.set_limit(channel.max_total)
        self.children: dict[str, _Child] = {}
        self.events: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.stopping = False
        self._conns: dict[Any, str] = {}
        self._conns_lock = threading.Lock()
        self._arrived = threading.Event()
        self._receiver: threading.Thread | None = None
        self._receiver_stop = threading.Event()
        self._closed = False

    def main_context(self) -> MainContext:
        return MainContext(self)

    def finished(self, names: tuple[str, ...]) -> bool:
        """Whether each named node has finished for good."""
        return all(name in self.children and self.children[name].finished for name in names)

    def pids(self) -> dict[str, int]:
        """Process ids per node, this process's for the main node."""
        pids = {self.program.main.name: os.getpid()}
        pids.update({name: child.process.pid for name, child in self.children.items()})
        return pids

    # ---------------------------------------------------------------------------- start

    def start_others(self) -> None:
        for variable in self.variables.values():
            variable.frozen = True
        self._receiver = threading.Thread(target=self._receive, name="launcher-receiver",
                                          daemon=True)
        self._receiver.start()
        for node in self.program.nodes:
            if not node.main:
                self._spawn(node, incarnation=0)

    def _spawn(self, node: Node, incarnation: int) -> None:
        reader, writer = self._mp.Pipe(duplex=False)
        spec = ChildSpec(
            node=node, channels=self.program.channels, slots=self.program.slot_of(node.name),
            stop=self._stop, counters=self._counter_arrays,
            variables={name: {key: p.name for key, p in variable.publishers.items()}
                       for name, variable in self.variables.items()},
            conn=writer, parent_pid=os.getpid(), incarnation=incarnation,
            spawn_time=time.time(),
        )
        process = self._mp.Process(target=child_main, args=(spec,), name=node.name,
                                   daemon=True)
        with _environment(node.env):
            process.start()
        writer.close()  # the child holds the only write end: its death means EOF here
        previous = self.children.get(node.name)
        child = _Child(node, process, incarnation)
        if previous is not None:
            child.startup_failures = 0 if previous.ready else previous.startup_failures + 1
        self.children[node.name] = child
        with self._conns_lock:
            self._conns[reader] = node.name

    # ------------------------------------------------------------------------- receiving

    def _receive(self) -> None:
        wait = multiprocessing.connection.wait
        hard_deadline: float | None = None
        while True:
            with self._conns_lock:
                conns = list(self._conns)
            if self._receiver_stop.is_set():
                if not conns:
                    return
                if hard_deadline is None:
                    hard_deadline = time.monotonic() + 5.0
                elif time.monotonic() > hard_deadline:
                    return
            if not conns:
                time.sleep(0.02)
                continue
            for conn in wait(conns, timeout=0.1):
                try:
                    channel, message = conn.recv()
                except (EOFError, OSError):
                    with self._conns_lock:
                        self._conns.pop(conn, None)
                    conn.close()
                    continue
                node = self._conns.get(conn, "?")
                if channel == EVENT:
                    child = self.children.get(node)
                    if (message.get("event") == "ready" and child is not None
                            and child.incarnation == message.get("incarnation")):
                        child.ready = True
                    with self.lock:
                        self.events.append(message)
                else:
                    self.streams[channel].put(node, message)
                self._arrived.set()

    # ----------------------------------------------------------------------- main side

    def after_main_step(self, status: str) -> None:
        if status == IDLE:
            self._arrived.wait(0.02)
            self._arrived.clear()

    def supervise(self) -> None:
        if self.stopping:
            return
        for name, child in list(self.children.items()):
            if child.finished or child.process.is_alive():
                continue
            exitcode = child.process.exitcode
            child.process.join(0.1)
            if exitcode == 0 or not child.node.restart or self._slot_exhausted(name):
                child.finished = True
                continue
            failures = child.startup_failures + (0 if child.ready else 1)
            if failures >= MAX_STARTUP_FAILURES:
                raise RuntimeError(
                    f"{name} died {failures} times before it was ready (last exit code "
                    f"{exitcode}); see its error above")
            self._spawn(child.node, child.incarnation + 1)
            with self.lock:
                self.events.append({"event": "restart", "node": name, "exitcode": exitcode,
                                    "incarnation": child.incarnation + 1,
                                    "pid": self.children[name].process.pid})

    def _slot_exhausted(self, name: str) -> bool:
        return any(self.counters[channel].exhausted()
                   for channel in self.program.slot_of(name))

    def stop_others(self, timeout: float) -> None:
        self.stopping = True
        self._stop[STOP] = 1
        processes = [c.process for c in self.children.values()]
        for child in self.children.values():
            if child.node.abandon_on_stop and child.process.is_alive():
                child.process.terminate()  # nothing to flush (e.g. an evaluation in progress)
        deadline = time.monotonic() + timeout
        while any(p.is_alive() for p in processes) and time.monotonic() < deadline:
            time.sleep(0.05)
        stragglers = [p for p in processes if p.is_alive()]
        for p in stragglers:
            logging.warning("terminating %s (pid %s)", p.name, p.pid)
            p.terminate()
        deadline = time.monotonic() + 2.0
        while any(p.is_alive() for p in stragglers) and time.monotonic() < deadline:
            time.sleep(0.05)
        for p in stragglers:
            if p.is_alive():
                logging.warning("killing %s (pid %s)", p.name, p.pid)
                p.kill()
            p.join(1.0)
        for p in processes:
            p.join(0.1)
        self._receiver_stop.set()
        if self._receiver is not None:
            self._receiver.join(10.0)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for child in self.children.values():
            if child.process.is_alive():
                child.process.kill()
                child.process.join(1.0)
        with self._conns_lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()
        for variable in self.variables.values():
            variable.close()
