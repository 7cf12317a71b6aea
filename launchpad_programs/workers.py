"""What runs inside an actor or evaluator node, whichever launcher hosts it.

Nothing here knows about processes, pipes or Ray: an actor node hands an :class:`ActorWorker` a
``VariableSource`` (the weights channel) and a ``send_chunk`` callable (the experience channel)
and steps it under the ``steps`` counter's budget and limit.

Importing this module does not import JAX: actor processes on the ONNX Runtime runtimes stay
small, and ``SINGLE_THREAD_ENV`` reaches them before any import (the launchers set a node's
``env`` while they start its process).
"""

from __future__ import annotations

import contextlib
import resource
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from actorq.core import Builder


def peak_rss_mib() -> float:
    """Peak resident set size of this process, MiB.

    Linux's ``ru_maxrss`` survives ``execve``: a child started by ``spawn`` (fork + exec) reports
    at least its parent's RSS at the fork, so it is read from ``VmHWM`` (per address space) where
    ``/proc`` has it.
    """
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class ChunkBuffer:
    """Buffers single transitions into numpy chunks of ``chunk_size`` rows for ``send``.

    Rows are written into preallocated arrays built from the replay signature (so dtypes match
    the table's); ``send`` gets ``{field: array[n, ...]}`` and owns them: each flush starts new
    arrays, so a receiver that keeps a chunk (the in-memory stream of the single launcher, an
    admission queue holding items the table cannot take yet) never sees it overwritten.
    """

    def __init__(self, signature: dict[str, Any], chunk_size: int,
                 send: Callable[[dict[str, np.ndarray]], None]) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        self._signature = dict(signature)
        self._size = chunk_size
        self._arrays = self._new_arrays()
        self._n = 0
        self._send = send
        self.transitions = 0
        self.chunks = 0

    def _new_arrays(self) -> dict[str, np.ndarray]:
        return {field: np.zeros((self._size, *spec.shape), dtype=spec.dtype)
                for field, spec in self._signature.items()}

    def add(self, transition: dict[str, np.ndarray]) -> None:
        for field, array in self._arrays.items():
            array[self._n] = transition[field]
        self._n += 1
        self.transitions += 1
        if self._n == self._size:
            self.flush()

    def flush(self) -> None:
        if self._n == 0:
            return
        n, self._n = self._n, 0
        self.chunks += 1
        arrays, self._arrays = self._arrays, self._new_arrays()
        self._send({field: array[:n] for field, array in arrays.items()})

    @property
    def pending(self) -> int:
        return self._n


class ActorWorker:
    """One actor node: FeedForwardActor + environment loop (``envs_per_actor`` environments) +
    chunked experience.

    Args:
      config: the experiment config.
      builder: the agent builder (``nodes.make_builder_for(config)``).
      index, num_actors: this actor's index (sets its exploration) and the actor count.
      source: the weights channel (``latest() -> (version, bytes) | None``).
      send_chunk: the experience channel; receives numpy chunks.
      seed_offset: offsets env and exploration seeds (a restarted or resumed actor gets fresh
        randomness).
      exploration_steps_done: steps this actor index already took (its exploration schedule
        continues).
      chunk_size: transitions per chunk.
      on_episode: called with each finished episode's EpisodeResult.
    """

    def __init__(
        self,
        config: Any,
        builder: Builder,
        index: int,
        num_actors: int,
        source: Any,
        send_chunk: Callable[[dict[str, np.ndarray]], None],
        seed_offset: int = 0,
        exploration_steps_done: int = 0,
        chunk_size: int = 64,
        on_episode: Callable[[Any], None] | None = None,
    ) -> None:
        from actorq.runtime.breakdown import RuntimeBreakdown
        from actorq.runtime.environment_loop import EnvironmentLoop
        from launchpad_programs import nodes

        self.index = index
        self.breakdown = RuntimeBreakdown()
        # chunk_size counts env steps: an unroll of T steps is one item.
        items_per_chunk = max(1, chunk_size // builder.steps_per_item)
        self.chunks = ChunkBuffer(builder.replay_signature(), items_per_chunk, send_chunk)
        self.actor, self.client = nodes.make_actor(
            config, builder, source, index, num_actors, self.chunks.add, self.breakdown,
            seed_offset, exploration_steps_done,
        )
        self.environments = nodes.actor_environments(config, index, seed_offset)
        self.loop = EnvironmentLoop(self.environments, self.actor, self.breakdown, on_episode)
        self.calls = 0
        self.first_action_time: float | None = None

    def step(self, max_transitions: int | None = None) -> tuple[int, list[Any]]:
        """One step of each of the actor's environments (at most ``max_transitions`` of them).

        Returns ``(environment steps taken, finished EpisodeResults)``.
        """
        before = self.loop.steps
        results = self.loop.step(max_transitions)
        taken = self.loop.steps - before
        self.calls += 1
        if self.first_action_time is None:
            self.first_action_time = time.time()
        return taken, results

    @property
    def steps(self) -> int:
        """Environment steps this worker took (all of its environments)."""
        return self.loop.steps

    @property
    def policy_version(self) -> int:
        return self.client.version

    def report(self) -> dict[str, Any]:
        """Plain-Python status: breakdown dict, steps, loaded version, pulls."""
        return {
            "breakdown": self.breakdown.to_dict(),
            "steps": self.steps,
            "policy_version": self.client.version,
            "num_pulls": self.client.num_pulls,
            "peak_rss_mib": peak_rss_mib(),
            # ONNX Runtime actors should never need it (tests/test_actor_process.py).
            "imports_jax": "jax" in sys.modules,
            "first_action_time": self.first_action_time,
            "time": time.time(),
        }

    def close(self) -> None:
        self.chunks.flush()
        for environment in self.environments:
            close = getattr(environment, "close", None)
            if close is not None:
                close()


def eval_row(actor_steps: int, learner_steps: int, wall_time_s: float,
             evaluation: dict[str, Any]) -> dict[str, Any]:
    """An ``eval.jsonl`` row from a :meth:`nodes.DualEvaluator.run` result: ``eval_return``
    scores the deployed package, ``eval_return_fp32`` (when evaluated) the learner's own fp32
    policy."""
    returns = evaluation["returns"]
    row = {
        "actor_steps": int(actor_steps),
        "learner_steps": int(learner_steps),
        "wall_time_s": float(wall_time_s),
        "eval_return": float(np.mean(returns)),
        "eval_return_std": float(np.std(returns)),
        "policy_version": int(evaluation["version"]),
    }
    if "fp32_returns" in evaluation:
        row["eval_return_fp32"] = float(np.mean(evaluation["fp32_returns"]))
        row["eval_return_fp32_std"] = float(np.std(evaluation["fp32_returns"]))
        row["fp32_policy_version"] = int(evaluation["fp32_version"])
    return row
