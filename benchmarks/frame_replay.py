"""Replay memory and speed with Atari frames stored once vs per transition.

    python -m benchmarks.frame_replay [--task=pong --steps=5000 --batch_size=32]

One actor's n-step transitions from the real game (uniformly random actions, the preset's
n-step) go into two tables with the same signature: dense (every transition keeps its two
[84, 84, 4] stacks) and frame-stacked (``Table(frame_stacks=...)``: each distinct frame once).
Prints the bytes held per transition, the projection to the Nature DQN's 1M transitions, and the
insert and sample cost of each, as ratios measured in this run.
"""

from __future__ import annotations

import time

import numpy as np
from absl import flags

from actorq.bounds import POSITIVE_INT, check_bounds
from actorq.command_line import bad_input, run_absl
from actorq.envs import make_environment
from actorq.envs.registry import tasks_of_family
from actorq.replay import MinSize, NStepTransitionAdder, Table, Uniform
from actorq.replay.specs import signature_from_example

_TASK = flags.DEFINE_enum("task", "pong", list(tasks_of_family("atari")), "Atari game.")
_STEPS = flags.DEFINE_integer("steps", 5000, "Env steps (the tables hold all of them).")
_BATCH = flags.DEFINE_integer("batch_size", 32, "Sampled batch size.")
_N_STEP = flags.DEFINE_integer("n_step", 1, "n-step of the transitions (the Atari preset: 1).")
_SAMPLES = flags.DEFINE_integer("samples", 200, "Timed sample calls per table.")


def transitions(task: str, steps: int, n_step: int) -> list[dict[str, np.ndarray]]:
    env = make_environment(task, seed=0)
    actions = env.action_spec().num_values
    rng = np.random.default_rng(0)
    items: list[dict[str, np.ndarray]] = []
    adder = NStepTransitionAdder(items.append, n_step, 0.99)
    adder.add_first(env.reset())
    for _ in range(steps):
        timestep = env.step(int(rng.integers(actions)))
        adder.add(np.int32(0), timestep)
        if timestep.last():
            adder.add_first(env.reset())
    env.close()
    return items


def held_bytes(table: Table) -> int:
    """Bytes the table's items occupy (frames once for a frame table)."""
    info, per_item = table.info(), 0
    for field, spec in table.signature.items():
        size = int(np.prod(spec.shape, dtype=np.int64)) * spec.dtype.itemsize
        per_item += spec.shape[-1] * 8 if field in table.frame_stacks else size  # int64 ids
    return info["size"] * per_item + info.get("frame_bytes", 0)


def main(argv: list[str]) -> None:
    del argv
    with bad_input():
        check_bounds({"steps": _STEPS.value, "batch_size": _BATCH.value,
                      "n_step": _N_STEP.value, "samples": _SAMPLES.value},
                     dict.fromkeys(("steps", "batch_size", "n_step", "samples"), POSITIVE_INT),
                     prefix="--")
    items = transitions(_TASK.value, _STEPS.value, _N_STEP.value)
    signature = signature_from_example(items[0])
    rows = {}
    for name, stacks in (("dense", ()), ("frames once", ("observation", "next_observation"))):
        table = Table("replay", len(items), signature, Uniform(), MinSize(1), seed=0,
                      frame_stacks=stacks)
        start = time.perf_counter()
        for item in items:
            table.insert(item)
        insert_us = (time.perf_counter() - start) / len(items) * 1e6
        start = time.perf_counter()
        for _ in range(_SAMPLES.value):
            table.sample(_BATCH.value)
        sample_ms = (time.perf_counter() - start) / _SAMPLES.value * 1e3
        rows[name] = (held_bytes(table) / len(items), insert_us, sample_ms, table.info())
    dense = rows["dense"]
    print(f"{_TASK.value}: {len(items)} transitions (n-step {_N_STEP.value}), "
          f"sample batch {_BATCH.value}")
    print("| storage | bytes per transition | 1M transitions (GB) | memory / dense "
          "| insert us/item | insert / dense | sample ms/batch | sample / dense |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, (per_item, insert_us, sample_ms, _) in rows.items():
        print(f"| {name} | {per_item:,.0f} | {per_item * 1e6 / 1e9:.1f} | "
              f"{per_item / dense[0]:.3f} | {insert_us:.1f} | {insert_us / dense[1]:.2f}x | "
              f"{sample_ms:.3f} | {sample_ms / dense[2]:.2f}x |")
    info = rows["frames once"][3]
    print(f"frames: {info['stacked_frames']:,} in stacks, {info['stored_frames']:,} stored "
          f"({info['stacked_frames'] / info['stored_frames']:.2f} stacks per stored frame)")


if __name__ == "__main__":
    run_absl(main)
