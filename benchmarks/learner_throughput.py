"""Learner update rate (SGD steps/s) for the paper's networks on this machine.

    python -m benchmarks.learner_throughput [--agents=d4pg,dqn,ddpg] [--calls=10]

Feeds the learner random batches of the right shapes (update cost does not depend on the data),
so this measures the jitted update alone: no replay sampling, no actors.
"""

from __future__ import annotations

import time

import numpy as np
from absl import flags

from actorq.agents.registry import make_builder
from actorq.bounds import LAYER_SIZES, POSITIVE_INT, check_bounds
from actorq.command_line import bad_input, parse_ints, run_absl
from actorq.envs import make_environment

_AGENTS = flags.DEFINE_list("agents", ["d4pg", "dqn"], "Agents to measure.")
_CALLS = flags.DEFINE_integer("calls", 10, "Timed learner calls per setting (after warm-up).")
_STEPS_PER_CALL = flags.DEFINE_list("sgd_steps_per_call", ["1", "4"], "Settings to compare.")

TASKS = {"d4pg": "walker_stand", "dqn": "cartpole", "ddpg": "halfcheetah"}


def describe_networks(config) -> str:
    """The hidden sizes (and the policy delay, where there is one) that the learner measured
    with, read from its config."""
    parts = [f"{name.removesuffix('hidden_sizes').rstrip('_') or 'network'} "
             f"{'-'.join(map(str, sizes))}"
             for name, sizes in vars(config).items() if name.endswith("hidden_sizes")]
    if getattr(config, "policy_frequency", 1) > 1:
        parts.append(f"policy every {config.policy_frequency} steps")
    return ", ".join(parts)


def random_batches(builder, batch_size: int, steps_per_call: int):
    """Endless random batches matching the builder's replay signature."""
    rng = np.random.default_rng(0)
    signature = builder.replay_signature()
    shape = (steps_per_call, batch_size)
    batch = {}
    for key, spec in signature.items():
        if key == "action" and np.issubdtype(spec.dtype, np.integer):
            batch[key] = rng.integers(0, builder.num_actions, size=shape).astype(spec.dtype)
        elif key == "discount":
            batch[key] = np.full(shape, 0.95, np.float32)
        else:
            batch[key] = rng.uniform(-1, 1, size=shape + spec.shape).astype(spec.dtype)
    while True:
        yield batch


def measure(agent: str, steps_per_call: int) -> tuple[float, float, str, int]:
    """(SGD steps/s, ms per SGD step, networks, batch size) for the agent's default networks
    (the paper's for D4PG and DQN, CleanRL's MuJoCo settings for DDPG)."""
    env = make_environment(TASKS[agent], seed=0)
    builder = make_builder(agent, {"sgd_steps_per_call": steps_per_call}, env)
    learner = builder.make_learner(
        random_batches(builder, builder.config.batch_size, steps_per_call), seed=0
    )
    learner.step()  # compile
    learner.step()
    start = time.perf_counter()
    for _ in range(_CALLS.value):
        learner.step()
    elapsed = time.perf_counter() - start
    steps = _CALLS.value * steps_per_call
    return (steps / elapsed, 1e3 * elapsed / steps, describe_networks(builder.config),
            builder.config.batch_size)


def main(argv: list[str]) -> None:
    del argv
    with bad_input():
        steps_per_call = parse_ints(_STEPS_PER_CALL.value, "sgd_steps_per_call")
        unknown = sorted(set(_AGENTS.value) - set(TASKS))
        if unknown or not _AGENTS.value:
            raise ValueError(f"--agents: unknown {unknown}; valid: {', '.join(TASKS)}")
        check_bounds({"calls": _CALLS.value, "sgd_steps_per_call": steps_per_call},
                     {"calls": POSITIVE_INT, "sgd_steps_per_call": LAYER_SIZES}, prefix="--")
    print("| agent | networks | batch | SGD steps per call | SGD steps/s | ms per SGD step |")
    print("|---|---|---:|---:|---:|---:|")
    for agent in _AGENTS.value:
        for per_call in steps_per_call:
            try:
                rate, ms, networks, batch = measure(agent, per_call)
            except ValueError as e:  # e.g. DDPG: not a multiple of its policy_frequency
                print(f"| {agent} | - | - | {per_call} | - | {e} |")
                continue
            print(f"| {agent} | {networks} | {batch} | {per_call} | {rate:.2f} | {ms:.1f} |")


if __name__ == "__main__":
    run_absl(main)
