"""Returns of a trained MinAtar policy under the evaluation protocols that published references use.

A MinAtar reference return is only comparable under its own protocol. actorq's evaluator keeps the
MinAtar paper's sticky actions (probability 0.1 that the previous action repeats) and plays the
greedy action of a categorical policy. gymnax and PureJaxRL, whose PPO returns docs/pixels.md
cites, play without sticky actions and score the actions their policy samples. This module plays
one policy under each combination on shared episode seeds, so that the gap between a run and its
reference can be split into protocol and learning.

Each protocol plays episode ``i`` in a fresh environment seeded with ``episode_seeds(seed, k)[i]``
(the same seeds as the PTQ study); sampled actions draw from ``softmax(logits)`` with a generator
seeded by ``seed``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from actorq.analysis.ptq import episode_seeds
from actorq.envs.minatar_env import STICKY_ACTION_PROB, make_minatar_environment
from actorq.envs.registry import minatar_game, task_family
from actorq.runtime.environment_loop import evaluate


@dataclasses.dataclass(frozen=True)
class Protocol:
    """How episodes are played: the sticky-action probability, and greedy or sampled actions."""

    sticky_action_prob: float
    sampled: bool

    @property
    def name(self) -> str:
        actions = "sampled" if self.sampled else "greedy"
        return f"sticky {self.sticky_action_prob:g}, {actions}"


# actorq's evaluator first (the MinAtar paper's sticky actions, greedy), gymnax's last.
PROTOCOLS: tuple[Protocol, ...] = (
    Protocol(STICKY_ACTION_PROB, sampled=False),
    Protocol(STICKY_ACTION_PROB, sampled=True),
    Protocol(0.0, sampled=False),
    Protocol(0.0, sampled=True),
)


def sample_from_logits(logits: np.ndarray, rng: np.random.Generator) -> int:
    """One action drawn from ``softmax(logits)`` (a 1-d array of one observation's logits)."""
    z = np.asarray(logits, np.float64)
    p = np.exp(z - z.max())
    return int(rng.choice(len(p), p=p / p.sum()))


def protocol_returns(
    runtime: Callable[[np.ndarray], np.ndarray],
    task: str,
    protocol: Protocol,
    episodes: int,
    seed: int = 0,
) -> list[float]:
    """Episode returns of ``runtime`` (a batch of observations -> logits) on MinAtar ``task``.

    Raises:
      ValueError: ``task`` is not a MinAtar task, or ``episodes`` < 1.
    """
    if task_family(task) != "minatar":
        raise ValueError(f"evaluation protocols cover MinAtar tasks only, not {task!r}")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    rng = np.random.default_rng(seed)

    def act(observation: np.ndarray) -> int:
        logits = np.asarray(runtime(np.asarray(observation)[None]))[0]
        return sample_from_logits(logits, rng) if protocol.sampled else int(np.argmax(logits))

    returns: list[float] = []
    for episode_seed in episode_seeds(seed, episodes):
        env = make_minatar_environment(minatar_game(task), seed=episode_seed, name=task,
                                       sticky_action_prob=protocol.sticky_action_prob)
        try:
            returns.extend(evaluate(env, act, 1))
        finally:
            env.close()
    return returns


def protocol_table(
    runtimes: dict[str, Callable[[np.ndarray], np.ndarray]],
    task: str,
    episodes: int,
    seed: int = 0,
    protocols: Sequence[Protocol] = PROTOCOLS,
) -> list[dict]:
    """One row per (precision, protocol): mean, population std and standard error of the return."""
    rows = []
    for precision, runtime in runtimes.items():
        for protocol in protocols:
            returns = np.asarray(protocol_returns(runtime, task, protocol, episodes, seed))
            rows.append({
                "precision": precision,
                "protocol": protocol.name,
                "sticky_action_prob": protocol.sticky_action_prob,
                "sampled": protocol.sampled,
                "mean": float(returns.mean()),
                "std": float(returns.std()),
                "sem": float(returns.std() / np.sqrt(len(returns))),
                "returns": returns.tolist(),
            })
    return rows
