"""An ActorQ program: a graph of named nodes and the channels between them (Launchpad-style).

    program = make_program(config)
    print(program)              # the topology: nodes, what each runs, channels
    run_distributed(config, run_dir)   # a launcher turns the program into processes / Ray actors

Nodes: ``replay``, ``learner``, ``actor_0 .. actor_{N-1}``, ``evaluator``, ``counter``.
Channels: ``weights`` (learner -> actors, evaluator: versioned, already-quantized packages),
``experience`` (actors -> replay: numpy chunks of n-step transitions tagged with the policy
version) and ``control`` (stop signal and global step counters, shared by every node).

The program is agent-agnostic: it describes the config's agent through its builder
(``nodes.make_builder_for``) and never imports an agent package itself.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import ml_collections

# Experience chunk size (transitions per message from an actor to replay).
DEFAULT_CHUNK_SIZE = 64
# Learner steps between published packages; 0 = automatic (see ``publish_policy``).
DEFAULT_PUBLISH_PERIOD = 0


@dataclasses.dataclass(frozen=True)
class Node:
    """One node of the program.

    Attributes:
      name: unique name (``actor_3``).
      kind: ``replay`` | ``learner`` | ``actor`` | ``evaluator`` | ``counter``.
      runs: what the node runs, in words.
      process: the process group that hosts it (``learner`` for replay and counter in the local
        launcher; each actor and the evaluator get their own).
      index: the actor index, for actors.
    """

    name: str
    kind: str
    runs: str
    process: str
    index: int | None = None


@dataclasses.dataclass(frozen=True)
class Channel:
    """A named, one-way data path between nodes."""

    name: str
    sources: tuple[str, ...]
    targets: tuple[str, ...]
    carries: str


@dataclasses.dataclass(frozen=True)
class Program:
    """The node graph of one experiment, plus the settings launchers need."""

    config: ml_collections.ConfigDict
    nodes: tuple[Node, ...]
    channels: tuple[Channel, ...]
    agent: str
    task: str
    quantizer: str
    num_actors: int
    chunk_size: int
    publish_period: int

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no node {name!r}; nodes: {', '.join(n.name for n in self.nodes)}")

    def channel(self, name: str) -> Channel:
        for channel in self.channels:
            if channel.name == name:
                return channel
        raise KeyError(f"no channel {name!r}")

    @property
    def actors(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.kind == "actor")

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes)

    def __str__(self) -> str:
        launcher = self.config.get("launcher", "local")
        lines = [
            f"Program {self.agent}/{self.task}: {self.num_actors} {self.quantizer} actor(s), "
            f"launcher={launcher}",
            "nodes:",
        ]
        width = max(len(n.name) for n in self.nodes)
        for node in self.nodes:
            lines.append(f"  {node.name:<{width}}  [{node.process}]  {node.runs}")
        lines.append("channels:")
        cwidth = max(len(c.name) for c in self.channels)
        for channel in self.channels:
            lines.append(
                f"  {channel.name:<{cwidth}}  {', '.join(channel.sources)} -> "
                f"{', '.join(channel.targets)}: {channel.carries}"
            )
        return "\n".join(lines)


def publish_policy(config: ml_collections.ConfigDict) -> str:
    """How often the learner publishes, in words."""
    period = int(config.get("publish_period", DEFAULT_PUBLISH_PERIOD) or 0)
    if period > 0:
        return f"every {period} learner steps"
    return "whenever stale, at most ~10% of learner time spent quantizing (publish_period=0)"


def envs_label(config: ml_collections.ConfigDict) -> str:
    """``"4 x "`` for an actor with 4 environments, ``""`` for the paper's one."""
    from launchpad_programs.nodes import envs_per_actor

    k = envs_per_actor(config)
    return f"{k} x " if k > 1 else ""


def make_program(config: ml_collections.ConfigDict, builder: Any | None = None) -> Program:
    """The program graph for ``config`` (agent, task, quantizer and num_actors from it)."""
    from launchpad_programs import nodes as node_lib

    num_actors = int(config.num_actors)
    if num_actors < 1:
        raise ValueError(f"a distributed program needs num_actors >= 1, got {num_actors}")
    builder = builder if builder is not None else node_lib.make_builder_for(config)
    network = builder.policy_network
    learner_cfg = builder.config
    chunk_size = int(config.get("chunk_size", DEFAULT_CHUNK_SIZE) or DEFAULT_CHUNK_SIZE)
    publish_period = int(config.get("publish_period", DEFAULT_PUBLISH_PERIOD) or 0)
    policy = (f"MLP {builder.observation_size} -> {'x'.join(map(str, network.hidden_sizes))} "
              f"-> {network.output_size}")
    replay = config.replay
    nodes: list[Node] = [
        Node(
            "replay", "replay",
            f"Table(max_size={replay.max_size}, min_size={replay.min_size}, "
            f"max_times_sampled={replay.max_times_sampled}, "
            f"{'prioritized' if builder.uses_priorities else 'uniform'} sampler, fifo remover); "
            "drains the experience channel with insert_batch",
            process="learner",
        ),
        Node(
            "learner", "learner",
            f"{type(builder).__name__}.make_learner: full-precision {config.agent} on {policy}, "
            f"batch {learner_cfg.batch_size} x {learner_cfg.sgd_steps_per_call} SGD steps/call"
            + (f", paced at {replay.samples_per_insert:g} samples/insert (ratio rate limiter)"
               if replay.get("rate_limiter", "ratio") == "ratio"
               else ", unpaced (rate limiter none)")
            + f"; quantizes with {config.quantizer!r} and publishes {publish_policy(config)}",
            process="learner",
        ),
    ]
    for i in range(num_actors):
        nodes.append(Node(
            f"actor_{i}", "actor",
            f"FeedForwardActor on {envs_label(config)}{config.task} "
            f"({config.actor_runtime} runtime, "
            f"{config.quantizer} package, exploration {i}/{num_actors}), pulls every "
            f"{config.pull_period} steps, {builder.n_step}-step adder, chunks of {chunk_size}",
            process=f"actor_{i}", index=i,
        ))
    nodes.append(Node(
        "evaluator", "evaluator",
        f"{config.eval_episodes} noise-free episodes of the newest {config.quantizer} package "
        f"every {config.eval_every_steps} global actor steps",
        process="evaluator",
    ))
    nodes.append(Node(
        "counter", "counter",
        f"global actor-step counter (budget {config.max_actor_steps}), learner steps, "
        "stop signal",
        process="learner",
    ))
    actor_names = tuple(f"actor_{i}" for i in range(num_actors))
    channels = (
        Channel("weights", ("learner",), (*actor_names, "evaluator"),
                f"versioned {config.quantizer} policy package bytes (crc-checked); "
                f"actors pull every {config.pull_period} steps"),
        Channel("experience", actor_names, ("replay",),
                f"numpy chunks of {chunk_size} {builder.n_step}-step transitions "
                "tagged with policy_version"),
        Channel("control", ("counter",), ("learner", *actor_names, "evaluator"),
                "stop signal, global actor steps, learner steps; actors report steps, "
                "episodes and runtime breakdowns back"),
    )
    return Program(
        config=config,
        nodes=tuple(nodes),
        channels=channels,
        agent=str(config.agent),
        task=str(config.task),
        quantizer=str(config.quantizer),
        num_actors=num_actors,
        chunk_size=chunk_size,
        publish_period=publish_period,
    )
