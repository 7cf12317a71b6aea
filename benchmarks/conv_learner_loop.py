"""Conv learners' step with their SGD steps traced with no loop, against ``lax.scan(unroll=True)``.

    python -m benchmarks.conv_learner_loop [--presets=a2c:minatar_breakout,dqn:minatar_breakout]
        [--calls=100]

Builds each preset's learner twice, once as the code runs it (``scan_without_loop``) and once
with the steps in ``lax.scan(..., unroll=True)`` (what the learners used before 2026-12-07),
feeds both the same random batch of the preset's table signature, and prints ms per learner step
and the ratio, both measured in this run.
"""

from __future__ import annotations

import importlib
import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np
from absl import flags

from actorq.agents.builder import AgentBuilder
from actorq.agents.dqn import learning as dqn_learning
from actorq.agents.on_policy import learning as on_policy_learning
from actorq.bounds import POSITIVE_INT, check_bounds
from actorq.command_line import bad_input, run_absl
from actorq.metrics.machine import machine_name
from launchpad_programs.nodes import make_builder_for

_PRESETS = flags.DEFINE_list("presets", ["a2c:minatar_breakout", "dqn:minatar_breakout"],
                             "agent:preset pairs with conv torsos")
_CALLS = flags.DEFINE_integer("calls", 100, "Timed learner steps per variant (after warm-up).")

_MODULES = (dqn_learning, on_policy_learning)


def one_batch(builder: AgentBuilder) -> dict[str, np.ndarray]:
    """A random batch of the builder's table signature: ``[calls, batch, ...]`` for replay
    agents (one SGD step per call), ``[unrolls, T, ...]`` for the queue agents."""
    rng = np.random.default_rng(0)
    lead = (builder.batch_items,) if builder.data_path == "queue" else (
        1, builder.config.batch_size)
    batch = {}
    for key, spec in builder.replay_signature().items():
        dtype = np.dtype(spec.dtype)
        shape = lead + tuple(spec.shape)
        if dtype == np.uint8:
            batch[key] = rng.integers(0, 2, shape).astype(dtype)
        elif key == "action":
            batch[key] = rng.integers(0, builder.action_size, shape).astype(dtype)
        elif np.issubdtype(dtype, np.integer) or dtype == np.bool_:
            batch[key] = np.zeros(shape, dtype)
        elif key == "behaviour_logprob":
            batch[key] = np.full(shape, -np.log(builder.action_size), dtype)
        else:
            batch[key] = rng.uniform(0, 1, shape).astype(dtype)
    return batch


def _scan_with_loop(step: Callable, init: Any, xs: Any, unrolled: bool) -> tuple[Any, Any]:
    return jax.lax.scan(step, init, xs, unroll=unrolled)


def time_learner(builder: AgentBuilder, batch: dict[str, np.ndarray], calls: int,
                 scan: Callable | None = None) -> float:
    """ms per learner step; ``scan`` replaces the learners' ``scan_without_loop``."""
    originals = [module.scan_without_loop for module in _MODULES]
    try:
        if scan is not None:
            for module in _MODULES:
                module.scan_without_loop = scan
        batches: Iterator[dict[str, np.ndarray]] = itertools.repeat(batch)
        learner = builder.make_learner(batches, seed=0)
        learner.step()  # compile
        learner.step()
        start = time.perf_counter()
        for _ in range(calls):
            learner.step()
        return 1e3 * (time.perf_counter() - start) / calls
    finally:
        for module, original in zip(_MODULES, originals):
            module.scan_without_loop = original


def main(argv: list[str]) -> None:
    del argv
    with bad_input():
        check_bounds({"calls": _CALLS.value}, {"calls": POSITIVE_INT}, prefix="--")
        builders = []
        for entry in _PRESETS.value:
            agent, _, preset = entry.partition(":")
            config = importlib.import_module(f"configs.{agent}_actorq").get_config(preset)
            builder = make_builder_for(config)
            if not builder.pixels:
                raise ValueError(f"--presets: {entry} has no conv torso")
            builders.append((entry, builder))
    print(f"machine: {machine_name()}")
    print("| preset | lax.scan(unroll=True) ms/step | no loop ms/step | speed-up |")
    print("|---|---:|---:|---:|")
    for entry, builder in builders:
        batch = one_batch(builder)
        looped = time_learner(builder, batch, _CALLS.value, _scan_with_loop)
        flat = time_learner(builder, batch, _CALLS.value)
        print(f"| {entry} | {looped:.2f} | {flat:.2f} | {looped / flat:.2f}x |")


if __name__ == "__main__":
    run_absl(main)
