"""The Ray launcher: the main node in this process, every other node as a Ray actor.

Without an address it starts a local Ray instance bound to this machine (or reuses one already
initialised in this process, e.g. by a test) and shuts it down at the end only if it started
it. With ``ray_address`` it joins that cluster.

Channels (Launchpad's controller pattern):

* a **hub** actor, pinned to this process's node, holds every counter and the newest
  ``ObjectRef`` of every variable key;
* **variable**: the main node ``ray.put``\\ s each published value once and registers its
  ref with the hub; a reader asks the hub for a version newer than its own and, if there is
  one, ``ray.get``\\ s the bytes;
* **stream**: a node buffers its messages; this process keeps one ``drain()`` call in flight
  per node, which returns every message and event gathered since the previous one in one reply,
  so per-call overhead stays off the node's hot path;
* **counter**: sources claim steps from the hub in blocks (``CLAIM_BLOCK``), so the bound holds
  exactly; unused claims are returned on a clean stop (a killed node's unused claim counts as
  spent). Claims also stop at the counter's limit.

A node whose ``drain`` raises ``RayActorError`` is dead: restarted as in the local launcher.
Ray is an optional extra: importing this module does not import ray, and a missing ray raises
an error telling how to install it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
import traceback
from typing import Any

from absl import logging

from launchpad_programs.launchers.main_loop import MainContext
from launchpad_programs.launchers.memory import MemoryStream
from launchpad_programs.program import FINISHED, IDLE, Channel, Node, Program

CLAIM_BLOCK = 100
DRAIN_WAIT_S = 0.2
STATUS_EVERY_S = 0.1
GAUGE_EVERY_S = 0.05
MAX_STARTUP_FAILURES = 3
NODES_EVERY_S = 1.0  # how often the cluster's node list is read (node-loss events)
IDLE_SLEEP_MAX_S = 0.02


def import_ray() -> Any:
    """``import ray``, or an ImportError saying how to install it."""
    try:
        import ray
    except ImportError as error:
        raise ImportError(
            "launcher 'ray' needs Ray, an optional extra: pip install -e \".[ray]\" "
            "(or pip install 'ray>=2.40')"
        ) from error
    return ray


# --------------------------------------------------------------------------------- Ray actors
# Plain classes, wrapped with ray.remote() at launch, so importing this module needs no Ray.


class ChannelHub:
    """Every counter of the program and the newest ref of every variable key."""

    def __init__(self, channels: tuple[Channel, ...]) -> None:
        self._counters = {
            c.name: {"base": 0, "limit": int(c.max_total), "max": int(c.max_total),
                     "slots": [0] * len(c.sources), "gauges": {g: 0 for g in c.gauges}}
            for c in channels if c.kind == "counter"}
        self._variables: dict[str, dict[str, tuple[int, list[Any]]]] = {
            c.name: {} for c in channels if c.kind == "variable"}
        self._stop = False

    def claim(self, channel: str, slot: int, n: int) -> tuple[int, int, bool]:
        """Grants up to ``n`` steps to ``slot``: (granted, total, final). 0 granted with
        ``final`` once the bound is reached or the program stops; 0 without it while the
        limit is reached (ask again later)."""
        c = self._counters[channel]
        total = c["base"] + sum(c["slots"])
        if self._stop or total >= c["max"]:
            return 0, total, True
        granted = max(0, min(int(n), c["max"] - total, c["limit"] - total))
        c["slots"][slot] += granted
        return granted, total + granted, False

    def release(self, channel: str, slot: int, n: int) -> None:
        """Returns ``n`` claimed but untaken steps."""
        self._counters[channel]["slots"][slot] -= int(n)

    def status(self, channel: str) -> dict[str, Any]:
        c = self._counters[channel]
        return {"total": c["base"] + sum(c["slots"]), "slots": list(c["slots"]),
                "gauges": dict(c["gauges"]), "stop": self._stop}

    def set_limit(self, channel: str, limit: int) -> None:
        self._counters[channel]["limit"] = int(limit)

    def set_gauge(self, channel: str, name: str, value: int) -> None:
        self._counters[channel]["gauges"][name] = int(value)

    def reset(self, channel: str, base: int, slots: list[int]) -> None:
        c = self._counters[channel]
        c["slots"] = [int(s) for s in slots]
        c["base"] = int(base) - sum(c["slots"])

    def publish(self, channel: str, key: str, version: int, ref: list[Any]) -> None:
        """Registers the newest version of ``key``: a one-element list holding its
        ObjectRef (so Ray passes the reference instead of resolving it)."""
        current = self._variables[channel].get(key)
        if current is None or version > current[0]:
            self._variables[channel][key] = (int(version), ref)

    def latest(self, channel: str, key: str, newer_than: int) -> tuple[int, list[Any]] | None:
        current = self._variables[channel].get(key)
        if current is None or current[0] <= newer_than:
            return None
        return current

    def stop(self) -> None:
        self._stop = True

    def node_id(self) -> str:
        """The Ray node this hub runs on."""
        return import_ray().get_runtime_context().get_node_id()


class _RayReader:
    """The newest version of one variable key, through the hub and the object store."""

    def __init__(self, hub: Any, channel: str, key: str) -> None:
        self._hub, self._channel, self._key = hub, channel, key
        self._cached: tuple[int, bytes] | None = None

    def latest(self) -> tuple[int, bytes] | None:
        ray = import_ray()
        current = -1 if self._cached is None else self._cached[0]
        newer = ray.get(self._hub.latest.remote(self._channel, self._key, current))
        if newer is not None:
            version, (ref,) = newer
            self._cached = (version, ray.get(ref))
        return self._cached


class _NodeVariable:
    def __init__(self, hub: Any, channel: str) -> None:
        self._hub, self._channel = hub, channel

    def publish(self, key: str, version: int, data: bytes) -> None:
        raise RuntimeError(f"variable {self._channel!r} is published by the main node only")

    def reader(self, key: str) -> _RayReader:
        return _RayReader(self._hub, self._channel, key)


class _NodeCounter:
    """A counter as a source or reader node sees it: claims in blocks, a cached status."""

    def __init__(self, hub: Any, channel: Channel, slot: int | None) -> None:
        self._hub, self._channel, self._slot = hub, channel, slot
        self._pool = 0
        self._final = False
        self._status: dict[str, Any] | None = None
        self._status_time = 0.0

    def _fresh_status(self, max_age: float = STATUS_EVERY_S) -> dict[str, Any]:
        now = time.monotonic()
        if self._status is None or now - self._status_time >= max_age:
            self._status = import_ray().get(self._hub.status.remote(self._channel.name))
            self._status_time = now
        return self._status

    def total(self) -> int:
        return int(self._fresh_status()["total"])

    def slots(self) -> list[int]:
        return list(self._fresh_status(0.0)["slots"])

    def acquire(self, want: int) -> int:
        if self._slot is None:
            raise RuntimeError(f"only the slot holders of {self._channel.name!r} acquire steps")
        if self._pool == 0 and not self._final:
            granted, total, final = import_ray().get(
                self._hub.claim.remote(self._channel.name, self._slot, CLAIM_BLOCK))
            self._pool, self._final = granted, final
            if self._status is not None:
                self._status["total"] = total
        return min(int(want), self._pool)

    def commit(self, taken: int) -> None:
        self._pool -= int(taken)

    def exhausted(self) -> bool:
        return self._final or self.total() >= int(self._channel.max_total)

    def gauge(self, name: str) -> int:
        return int(self._fresh_status()["gauges"][name])

    def set_gauge(self, name: str, value: int) -> None:
        raise RuntimeError("gauges are set by the main node only")

    def set_limit(self, limit: int) -> None:
        raise RuntimeError("the limit is set by the main node only")

    def reset(self, base: int, slots: list[int]) -> None:
        raise RuntimeError("counters are reset by the main node only")

    def release(self) -> None:
        """Returns the unused claim (a clean stop)."""
        if self._pool > 0 and self._slot is not None:
            self._hub.release.remote(self._channel.name, self._slot, self._pool)
            self._pool = 0


class _NodeStream:
    """A stream as a source node sees it: messages wait in its host until the next drain."""

    def __init__(self, host: NodeHost, channel: str) -> None:
        self._host, self._channel = host, channel

    def send(self, message: Any) -> None:
        self._host.buffer(self._channel, message)

    def receive(self, timeout: float = 0.0) -> list[tuple[str, Any]]:
        raise RuntimeError(f"stream {self._channel!r} is received by the main node only")


class NodeHost:
    """Hosts one node in a Ray actor: steps it on a background thread; ``drain()`` hands the
    gathered stream messages and events to the launching process."""

    def __init__(self, node: Node, channels: tuple[Channel, ...], slots: dict[str, int],
                 hub: Any, incarnation: int, spawn_time: float) -> None:
        self.name = node.name
        self.incarnation = incarnation
        self._node, self._slots, self._hub = node, slots, hub
        self._channels = {c.name: c for c in channels}
        self._spawn_time = spawn_time
        self._lock = threading.Condition()
        self._messages: list[tuple[str, Any]] = []
        self._events: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._finished = False
        self._counters: list[_NodeCounter] = []
        self._thread = threading.Thread(target=self._run, name=node.name, daemon=True)
        self._thread.start()

    # The node's context -----------------------------------------------------------------

    def stream(self, channel: str) -> _NodeStream:
        return _NodeStream(self, channel)

    def variable(self, channel: str) -> _NodeVariable:
        return _NodeVariable(self._hub, channel)

    def counter(self, channel: str) -> _NodeCounter:
        counter = _NodeCounter(self._hub, self._channels[channel], self._slots.get(channel))
        self._counters.append(counter)
        return counter

    def stopping(self) -> bool:
        return self._stop.is_set()

    def ready(self, **info: Any) -> None:
        self._event({"event": "ready", "node": self.name, "incarnation": self.incarnation,
                     "pid": os.getpid(), "host": socket.gethostname(),
                     "ray_node": import_ray().get_runtime_context().get_node_id(),
                     "startup_s": time.time() - self._spawn_time, **info})

    def events(self) -> list[dict[str, Any]]:
        raise RuntimeError("lifecycle events go to the main node only")

    def finished(self, names: tuple[str, ...]) -> bool:
        raise RuntimeError("only the main node watches other nodes")

    def pids(self) -> dict[str, int]:
        raise RuntimeError("only the main node knows every process")

    # Ray methods ------------------------------------------------------------------------

    def stop(self) -> None:
        self._stop.set()

    def drain(self, wait_s: float = DRAIN_WAIT_S) -> dict[str, Any]:
        """Everything gathered since the last call (waits up to ``wait_s`` for something)."""
        with self._lock:
            if not self._messages and not self._events and not self._finished:
                self._lock.wait(wait_s)
            messages, self._messages = self._messages, []
            events, self._events = self._events, []
            return {"messages": messages, "events": events, "finished": self._finished}

    def buffer(self, channel: str, message: Any) -> None:
        """Keeps a stream message for the next drain (called from the node's thread)."""
        with self._lock:
            self._messages.append((channel, message))
            self._lock.notify_all()

    def _event(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._events.append(event)
            self._lock.notify_all()

    def _run(self) -> None:
        try:
            body = self._node.make(self, **self._node.kwargs)
            pause = 0.0
            while not self._stop.is_set():
                status = body.step()
                if status == FINISHED:
                    break
                if status == IDLE:
                    pause = min(max(2 * pause, 0.0002), IDLE_SLEEP_MAX_S)
                    time.sleep(pause)
                else:
                    pause = 0.0
            body.close(self._stop.is_set())
            for counter in self._counters:
                counter.release()
        except Exception:  # noqa: BLE001 - reported to the main node
            self._event({"event": "error", "node": self.name, "incarnation": self.incarnation,
                         "traceback": traceback.format_exc()})
        finally:
            with self._lock:
                self._finished = True
                self._lock.notify_all()


# ---------------------------------------------------------------------------- the main side


class _MainVariable:
    def __init__(self, host: RayHost, channel: str) -> None:
        self._host, self._channel = host, channel
        self._refs: dict[str, Any] = {}  # this process owns the objects: keep them alive

    def publish(self, key: str, version: int, data: bytes) -> None:
        ray = self._host.ray
        ref = ray.put(data)  # one object per value and version; readers fetch it
        self._host.hub.publish.remote(self._channel, key, int(version), [ref])
        self._refs[key] = ref

    def reader(self, key: str) -> _RayReader:
        return _RayReader(self._host.hub, self._channel, key)


class _MainCounter:
    """The main node's view of a counter: status refreshed by the receiver thread."""

    def __init__(self, host: RayHost, channel: Channel) -> None:
        self._host, self._channel = host, channel
        self.status: dict[str, Any] = {"total": 0, "slots": [0] * len(channel.sources),
                                       "gauges": {g: 0 for g in channel.gauges}}
        self._limit: int | None = None
        self._gauges_sent: dict[str, tuple[int, float]] = {}

    def refresh(self, timeout: float = 5.0) -> None:
        ray = self._host.ray
        with contextlib.suppress(Exception):  # keep the last known values
            self.status = ray.get(self._host.hub.status.remote(self._channel.name),
                                  timeout=timeout)

    def total(self) -> int:
        return int(self.status["total"])

    def slots(self) -> list[int]:
        return list(self.status["slots"])

    def acquire(self, want: int) -> int:
        raise RuntimeError("the main node holds no slot")

    def commit(self, taken: int) -> None:
        raise RuntimeError("the main node holds no slot")

    def exhausted(self) -> bool:
        return self.total() >= int(self._channel.max_total)

    def gauge(self, name: str) -> int:
        return int(self.status["gauges"][name])

    def set_gauge(self, name: str, value: int) -> None:
        # At most one actor call per GAUGE_EVERY_S per gauge: gauges are for rows and logs.
        now = time.monotonic()
        last = self._gauges_sent.get(name)
        if last is None or (last[0] != value and now - last[1] >= GAUGE_EVERY_S):
            self._host.hub.set_gauge.remote(self._channel.name, name, int(value))
            self._gauges_sent[name] = (int(value), now)
        self.status["gauges"][name] = int(value)

    def set_limit(self, limit: int) -> None:
        if limit != self._limit:  # one actor call per change
            self._limit = int(limit)
            self._host.hub.set_limit.remote(self._channel.name, self._limit)

    def reset(self, base: int, slots: list[int]) -> None:
        self._host.ray.get(self._host.hub.reset.remote(self._channel.name, base, slots))
        self.refresh()


class RayHost:
    """Runs a program's nodes as Ray actors (see the module docstring)."""

    def __init__(self, program: Program, address: str | None = None) -> None:
        self.ray = import_ray()
        self.program = program
        self._started_ray = False
        # Connect before the main node starts JAX (ray.init forks helper processes).
        self._connect(address, sum(1 for n in program.nodes if not n.main))
        self._check_main_resources(program.main)
        # The hub lives on this process's node, with the main node: on any other node, losing
        # that node would take every channel with it.
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(self.ray.get_runtime_context().get_node_id(),
                                              soft=False)
        self.hub = self.ray.remote(ChannelHub).options(
            num_cpus=0, scheduling_strategy=here).remote(program.channels)
        self.streams = {c.name: MemoryStream() for c in program.channels if c.kind == "stream"}
        self.variables = {c.name: _MainVariable(self, c.name) for c in program.channels
                          if c.kind == "variable"}
        self.counters = {c.name: _MainCounter(self, c) for c in program.channels
                         if c.kind == "counter"}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._pids: dict[str, int] = {program.main.name: os.getpid()}
        self.lock = threading.Lock()
        self.stopping = False
        self._arrived = threading.Event()
        self._receiver: threading.Thread | None = None
        self._receiver_stop = threading.Event()
        self._closed = False
        self._alive_nodes: set[str] = set()
        self._last_cluster_look = -NODES_EVERY_S
        total_cpus = float(self.ray.cluster_resources().get("CPU", 1.0))
        others = max(1, len(program.nodes) - 1)
        self._default_cpus = max(0.01, min(1.0, int(100 * total_cpus / (others + 1)) / 100))

    def _connect(self, address: str | None, num_nodes: int) -> None:
        """Joins the Ray instance of this process, ``address``, or starts a local one bound to
        this machine."""
        ray = self.ray
        if ray.is_initialized():
            return
        previous = signal.getsignal(signal.SIGTERM)
        kwargs: dict[str, Any] = {"include_dashboard": False}
        if address is None:
            address = "local"  # a new instance: never join a cluster that happens to be running
            # A local instance listens on this machine only (with Ray's token authentication,
            # on by default for local instances since Ray 2.59).
            kwargs["num_cpus"] = max(os.cpu_count() or 1, num_nodes)
            kwargs["_node_ip_address"] = "127.0.0.1"
        ray.init(address=address, **kwargs)
        self._started_ray = True
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)  # ray.init installs its own handler

    def _check_main_resources(self, main: Node) -> None:
        """The main node runs in this process: fail at once, with what to do, when this Ray
        node lacks the resources its ``ray_options`` ask for (e.g. a GPU)."""
        need = dict(main.ray_options.get("resources") or {})
        if main.ray_options.get("num_gpus"):
            need["GPU"] = float(main.ray_options["num_gpus"])
        if not need:
            return
        here = self.ray.get_runtime_context().get_node_id()
        have = next((n.get("Resources", {}) for n in self.ray.nodes() if n.get("NodeID") == here),
                    {})
        missing = {k: v for k, v in need.items() if float(have.get(k, 0.0)) < float(v)}
        if missing:
            raise RuntimeError(
                f"the main node {main.name!r} runs in this process and needs {missing}, but "
                f"this Ray node offers {dict(sorted(have.items()))}: launch the program on a node "
                "of the cluster that has them")

    def main_context(self) -> MainContext:
        return MainContext(self)

    def pids(self) -> dict[str, int]:
        """Process ids per node (a node's once it is ready)."""
        return dict(self._pids)

    def finished(self, names: tuple[str, ...]) -> bool:
        """Whether each named node has finished for good."""
        with self.lock:
            return all(name in self.nodes and self.nodes[name]["finished"] for name in names)

    # ---------------------------------------------------------------------------- start

    def start_others(self) -> None:
        for node in self.program.nodes:
            if not node.main:
                self._spawn(node, incarnation=0)
        self._receiver = threading.Thread(target=self._receive, name="launcher-ray-receiver",
                                          daemon=True)
        self._receiver.start()

    def _spawn(self, node: Node, incarnation: int) -> None:
        options: dict[str, Any] = {"num_cpus": self._default_cpus, "max_concurrency": 4,
                                   "runtime_env": {"env_vars": dict(node.env)}}
        options.update(node.ray_options)
        handle = self.ray.remote(NodeHost).options(**options).remote(
            node, self.program.channels, self.program.slot_of(node.name), self.hub,
            incarnation, time.time())
        with self.lock:
            previous = self.nodes.get(node.name, {})
            self.nodes[node.name] = {
                "node": node, "handle": handle, "ref": handle.drain.remote(),
                "incarnation": incarnation, "finished": False, "dead": False,
                "exitcode": None, "ready": False,
                "startup_failures": previous.get("startup_failures", 0)}

    # ------------------------------------------------------------------------- receiving

    def _receive(self) -> None:
        ray = self.ray
        last_status = 0.0
        while not self._receiver_stop.is_set():
            now = time.monotonic()
            if now - last_status >= STATUS_EVERY_S:
                last_status = now
                for counter in self.counters.values():
                    counter.refresh()
            with self.lock:
                pending = {n["ref"]: name for name, n in self.nodes.items()
                           if n["ref"] is not None}
            if not pending:
                time.sleep(0.05)
                continue
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0.05)
            for ref in ready:
                self._handle_drain(pending[ref], ref)

    def _handle_drain(self, name: str, ref: Any) -> None:
        ray = self.ray
        with self.lock:
            entry = self.nodes[name]
            if entry["ref"] is not ref:
                return
        try:
            out = ray.get(ref)
        except ray.exceptions.RayActorError as error:
            with self.lock:
                entry["ref"], entry["dead"] = None, True
                entry["exitcode"] = type(error).__name__
            return
        for channel, message in out["messages"]:
            self.streams[channel].put(name, message)
        with self.lock:
            for event in out["events"]:
                if event.get("event") == "ready":
                    entry["ready"] = True
                    self._pids[name] = int(event["pid"])
                if event.get("event") == "error":
                    entry["exitcode"] = "error"
                self.events.append(event)
            if out["finished"]:
                entry["ref"] = None
                if entry["exitcode"] == "error":
                    entry["dead"] = True
                else:
                    entry["finished"] = True
            else:
                entry["ref"] = entry["handle"].drain.remote()
        self._arrived.set()

    # ----------------------------------------------------------------------- main side

    def after_main_step(self, status: str) -> None:
        if status == IDLE:
            self._arrived.wait(0.02)
            self._arrived.clear()

    def _watch_cluster(self) -> None:
        """A ``node_lost`` event for every cluster node that died since the last look."""
        now = time.monotonic()
        if now - self._last_cluster_look < NODES_EVERY_S:
            return
        self._last_cluster_look = now
        try:
            nodes = self.ray.nodes()
        except Exception:  # noqa: BLE001 - the next look will tell
            return
        for info in nodes:
            node_id = info.get("NodeID")
            if info.get("Alive"):
                self._alive_nodes.add(node_id)
            elif node_id in self._alive_nodes:
                self._alive_nodes.discard(node_id)
                logging.warning("Ray node %s (%s) was lost", node_id,
                                info.get("NodeManagerAddress"))
                with self.lock:
                    self.events.append({"event": "node_lost", "ray_node": node_id,
                                        "host": info.get("NodeManagerAddress", "")})

    def supervise(self) -> None:
        if self.stopping:
            return
        self._watch_cluster()
        with self.lock:
            dead = [(name, dict(n)) for name, n in self.nodes.items()
                    if n["dead"] and not n["finished"]]
        for name, entry in dead:
            self._kill(entry["handle"])
            node: Node = entry["node"]
            exhausted = any(self.counters[c].exhausted() for c in self.program.slot_of(name))
            if not node.restart or exhausted:
                with self.lock:
                    self.nodes[name]["finished"] = True
                continue
            failures = entry["startup_failures"] + (0 if entry["ready"] else 1)
            if failures >= MAX_STARTUP_FAILURES:
                raise RuntimeError(f"{name} died {failures} times before it was ready")
            incarnation = entry["incarnation"] + 1
            self._spawn(node, incarnation)
            with self.lock:
                self.nodes[name]["startup_failures"] = 0 if entry["ready"] else failures
                self.events.append({"event": "restart", "node": name,
                                    "exitcode": entry["exitcode"], "incarnation": incarnation})

    def stop_others(self, timeout: float) -> None:
        self.stopping = True
        with self.lock:
            entries = list(self.nodes.values())
        try:
            self.hub.stop.remote()
            for entry in entries:
                if entry["node"].abandon_on_stop:
                    self._kill(entry["handle"])
                    entry["finished"], entry["ref"] = True, None
                else:
                    entry["handle"].stop.remote()
        except Exception:  # noqa: BLE001
            logging.exception("could not signal the Ray actors to stop")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                busy = [n for n in self.nodes.values()
                        if n["ref"] is not None and not n["finished"] and not n["dead"]]
            if not busy or self._receiver is None or not self._receiver.is_alive():
                break
            time.sleep(0.05)
        self._receiver_stop.set()
        if self._receiver is not None:
            self._receiver.join(5.0)
        for counter in self.counters.values():
            counter.refresh()
        with self.lock:
            handles = [n["handle"] for n in self.nodes.values()]
        for handle in handles:
            self._kill(handle)

    def _kill(self, handle: Any) -> None:
        if handle is None:
            return
        with contextlib.suppress(Exception):  # already gone
            self.ray.kill(handle, no_restart=True)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._kill(self.hub)
        self.variables.clear()
        if self._started_ray:
            self.ray.shutdown()
