"""Transitions between replay and learners: signature, batching, policy-lag bookkeeping."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from actorq.replay.specs import ArraySpec
from actorq.replay.table import Table

LEARNER_FIELDS = ("observation", "action", "reward", "discount", "next_observation")


def learner_batches(
    table: Table,
    batch_size: int,
    steps_per_call: int,
    timeout: float | None = None,
    with_sample_info: bool = False,
) -> Iterator[dict[str, np.ndarray]]:
    """Yields dicts of ``[steps_per_call, batch_size, ...]`` arrays for one learner call.

    Also yields ``policy_version`` (to measure policy lag) and, when ``with_sample_info``,
    ``keys``/``probabilities`` and ``table_size`` at sample time (prioritized replay).
    """
    n = batch_size * steps_per_call
    while True:
        sample = table.sample(n, timeout=timeout)
        batch = {
            key: sample.data[key].reshape(steps_per_call, batch_size, *sample.data[key].shape[1:])
            for key in LEARNER_FIELDS
        }
        if "policy_version" in sample.data:
            batch["policy_version"] = sample.data["policy_version"]
        if with_sample_info:
            batch["keys"] = sample.keys.reshape(steps_per_call, batch_size)
            batch["probabilities"] = sample.probabilities.reshape(steps_per_call, batch_size)
            # The size the probabilities refer to (importance weights), taken with the sample.
            batch["table_size"] = np.int64(sample.table_size)
        yield batch


def observation_item(observation: int | ArraySpec) -> ArraySpec:
    """One observation as tables store it: ``float32 [size]`` for a flat size, else the given
    spec (uint8 ``[H, W, C]`` frames)."""
    if isinstance(observation, ArraySpec):
        return observation
    return ArraySpec((int(observation),), np.dtype(np.float32))


def transition_signature(observation: int | ArraySpec,
                         action: ArraySpec) -> dict[str, ArraySpec]:
    """Replay signature of an n-step transition tagged with the policy version that made it.

    ``observation``: a flat observation size, or the stored observation spec
    (:func:`observation_item`)."""
    obs = observation_item(observation)
    scalar = ArraySpec((), np.dtype(np.float32))
    return {
        "observation": obs,
        "action": action,
        "reward": scalar,
        "discount": scalar,
        "next_observation": obs,
        "policy_version": ArraySpec((), np.dtype(np.int32)),
    }


def sample_policy_lag(learner_steps: int, batch: dict[str, np.ndarray]) -> dict[str, float]:
    """Mean learner-version lag of the sampled experience (empty if untagged)."""
    if "policy_version" not in batch:
        return {}
    return {"sample_policy_lag": float(learner_steps - np.mean(batch["policy_version"]))}
