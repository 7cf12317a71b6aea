"""Programs: graphs of nodes that carry their code, and the channels between them (Launchpad's
model).

    program = Program("ping", nodes=(...), channels=(...))
    result = launch(program, "local")        # or "single" (in-process) or "ray"

A :class:`Node` holds the callable that builds it (``make(ctx, **kwargs) -> NodeBody``) and its
arguments. A launcher (``launchpad_programs.launchers``) turns any program into one interleaved
loop, local processes or Ray actors. Launchers know nodes only by these fields: names, whether a
node is the program's ``main`` node, whether it is restarted, what environment it wants. They
never know what a node does.

Node bodies are stepped: ``step()`` does one small unit of work and says whether it ``WORKED``,
is ``IDLE`` (waiting on someone else: the launcher backs off briefly, or steps the other nodes
when it interleaves them) or ``FINISHED``. ``close(interrupted)`` is the body's last word. The
``main`` node runs in the launching process; the program ends when it finishes (or on Ctrl-C /
SIGTERM), then the launcher stops the other nodes, delivers their last messages, and returns the
main node's ``close()`` value.

Channels (each launcher implements the three kinds):

* ``stream``: messages from any number of source nodes to the main node, in order per source
  (pipes; an in-memory queue; Ray object-store batches);
* ``variable``: versioned bytes published by the main node under a key, read by any node as
  the newest version (shared memory; a dict; the Ray object store);
* ``counter``: a global step counter with one slot per source node, an upper bound
  (``max_total``), a limit the main node moves (a rate limiter) and named integer gauges.
  Sources ``acquire`` steps below both and ``commit`` those they took.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Protocol

# What NodeBody.step returns.
WORKED = "worked"
IDLE = "idle"
FINISHED = "finished"

CHANNEL_KINDS = ("stream", "variable", "counter")


class Stream(Protocol):
    """A stream channel as one node sees it."""

    def send(self, message: Any) -> None:
        """Sends ``message`` (picklable) to the main node. Sources only."""

    def receive(self, timeout: float = 0.0) -> list[tuple[str, Any]]:
        """Every ``(source node, message)`` that arrived, oldest first; waits up to ``timeout``
        seconds for the first one. Main node only."""


class VariableReader(Protocol):
    """The newest version of one key of a variable channel (Acme's ``VariableSource``)."""

    def latest(self) -> tuple[int, bytes] | None:
        """``(version, data)`` of the newest published version, or None before the first."""


class Variable(Protocol):
    """A variable channel as one node sees it."""

    def publish(self, key: str, version: int, data: bytes) -> None:
        """Makes ``data`` the newest version of ``key``. Main node only; every key must be
        published once before the other nodes start (their readers are made at start)."""

    def reader(self, key: str) -> VariableReader:
        """A reader of ``key``'s newest version."""


class Counter(Protocol):
    """A counter channel as one node sees it (see the module docstring)."""

    def total(self) -> int:
        """Steps counted by all slots (all incarnations), the starting base included."""

    def slots(self) -> list[int]:
        """Steps counted per slot (a slot's unused acquired steps included, where the
        launcher reserves them)."""

    def acquire(self, want: int) -> int:
        """Up to ``want`` steps this node may take now: 0 at the limit or the bound. Slot
        holders only (a counter's sources)."""

    def commit(self, taken: int) -> None:
        """Counts ``taken`` of the acquired steps as done."""

    def exhausted(self) -> bool:
        """Whether ``max_total`` is reached: no slot will ever get another step."""

    def gauge(self, name: str) -> int:
        """The value of a named gauge."""

    def set_gauge(self, name: str, value: int) -> None:
        """Sets a named gauge. Main node only."""

    def set_limit(self, limit: int) -> None:
        """Moves the limit ``acquire`` stops at. Main node only."""

    def reset(self, base: int, slots: list[int]) -> None:
        """Starting counts (a resumed run): the total is ``base``, each slot starts at its
        count. Main node only, while it is being built (before the other nodes start)."""


class NodeContext(Protocol):
    """What a launcher hands a node: its identity and its channel endpoints."""

    name: str
    incarnation: int  # 0, then +1 per restart

    def stream(self, channel: str) -> Stream: ...

    def variable(self, channel: str) -> Variable: ...

    def counter(self, channel: str) -> Counter: ...

    def stopping(self) -> bool:
        """Whether the program is stopping: a node should wind up (its ``close`` follows)."""

    def ready(self, **info: Any) -> None:
        """Tells the main node this node is up (``info`` goes into the ``ready`` event). A node
        that dies before it is ready three times in a row is not restarted again."""

    def events(self) -> list[dict[str, Any]]:
        """Lifecycle events since the last call: ``ready``, ``restart``, ``error``,
        ``finished``. Main node only."""

    def finished(self, names: tuple[str, ...]) -> bool:
        """Whether each named node has finished for good. Main node only."""

    def pids(self) -> dict[str, int]:
        """Process ids per node. Main node only."""


class NodeBody(Protocol):
    """A running node (see the module docstring)."""

    def step(self) -> str:
        """One unit of work: ``WORKED``, ``IDLE`` or ``FINISHED``."""

    def close(self, interrupted: bool) -> Any:
        """Flushes and releases; the main node returns the program's result."""


@dataclasses.dataclass(frozen=True)
class Node:
    """One node of a program.

    Attributes:
      name: unique name (``actor_3``).
      make: builds the node: ``make(ctx, **kwargs) -> NodeBody``. A module-level callable, so
        process and Ray launchers can ship it.
      kwargs: its arguments (picklable).
      kind: a label for people and logs (``actor``); launchers ignore it.
      runs: what the node runs, in words.
      main: the node the program runs for (exactly one): it runs in the launching process.
      restart: restart it (new incarnation) when it dies before finishing.
      abandon_on_stop: it has nothing to flush, so a stopping launcher terminates it at once.
      env: environment variables its process needs (set before anything is imported).
      ray_options: options of its Ray actor (``num_cpus``, ``resources``,
        ``scheduling_strategy``); other launchers ignore them. The main node runs in the
        launching process: the Ray launcher only checks that this node has its ``resources``.
    """

    name: str
    make: Callable[..., NodeBody]
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    kind: str = "node"
    runs: str = ""
    main: bool = False
    restart: bool = False
    abandon_on_stop: bool = False
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    ray_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Channel:
    """A named, one-way data path between nodes.

    Attributes:
      name: unique name.
      kind: ``stream``, ``variable`` or ``counter``.
      sources: nodes that write it (a counter's slot holders, in slot order).
      targets: nodes that read it.
      carries: what flows, in words.
      max_total: a counter's bound on its total (``acquire`` never passes it).
      gauges: a counter's named gauges.
    """

    name: str
    kind: str
    sources: tuple[str, ...]
    targets: tuple[str, ...]
    carries: str = ""
    max_total: int = 1 << 62
    gauges: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Program:
    """Nodes and channels; ``launch(program, launcher)`` runs it."""

    name: str
    nodes: tuple[Node, ...]
    channels: tuple[Channel, ...]
    settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ValueError(f"program {self.name!r}: node names repeat: {names}")
        mains = [n.name for n in self.nodes if n.main]
        if len(mains) != 1:
            raise ValueError(f"program {self.name!r} needs exactly one main node, got {mains}")
        main = mains[0]
        channel_names = [c.name for c in self.channels]
        if len(set(channel_names)) != len(channel_names):
            raise ValueError(f"program {self.name!r}: channel names repeat: {channel_names}")
        for channel in self.channels:
            if channel.kind not in CHANNEL_KINDS:
                raise ValueError(f"channel {channel.name!r}: unknown kind {channel.kind!r}; "
                                 f"valid: {', '.join(CHANNEL_KINDS)}")
            for end in (*channel.sources, *channel.targets):
                if end not in names:
                    raise ValueError(f"channel {channel.name!r} names an unknown node {end!r}")
            if channel.kind == "stream" and channel.targets != (main,):
                raise ValueError(f"stream {channel.name!r} must flow into the main node "
                                 f"{main!r}, not {channel.targets}")
            if channel.kind == "variable" and channel.sources != (main,):
                raise ValueError(f"variable {channel.name!r} is published by the main node "
                                 f"{main!r}, not {channel.sources}")

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no node {name!r}; nodes: {', '.join(n.name for n in self.nodes)}")

    def channel(self, name: str) -> Channel:
        for channel in self.channels:
            if channel.name == name:
                return channel
        raise KeyError(f"no channel {name!r}; channels: "
                       f"{', '.join(c.name for c in self.channels)}")

    @property
    def main(self) -> Node:
        return next(n for n in self.nodes if n.main)

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes)

    def nodes_of(self, kind: str) -> tuple[Node, ...]:
        """The nodes labelled ``kind``."""
        return tuple(n for n in self.nodes if n.kind == kind)

    def slot_of(self, node: str) -> dict[str, int]:
        """``{counter channel: slot index}`` for every counter ``node`` holds a slot of."""
        return {c.name: c.sources.index(node) for c in self.channels
                if c.kind == "counter" and node in c.sources}

    def __str__(self) -> str:
        lines = [f"Program {self.name}", "nodes:"]
        width = max(len(n.name) for n in self.nodes)
        for node in self.nodes:
            role = "main" if node.main else ("restarted" if node.restart else "once")
            lines.append(f"  {node.name:<{width}}  [{node.kind}, {role}]  {node.runs}")
        lines.append("channels:")
        cwidth = max(len(c.name) for c in self.channels)
        for channel in self.channels:
            lines.append(
                f"  {channel.name:<{cwidth}}  ({channel.kind}) {', '.join(channel.sources)} -> "
                f"{', '.join(channel.targets)}: {channel.carries}"
            )
        return "\n".join(lines)
