"""The base class of every actorq environment adapter: shared specs and the non-finite guard.

Every adapter (gymnasium discrete, gymnasium continuous, DMC) implements ``_reset``/``_step``;
the public ``reset``/``step`` here check each timestep's observation and reward, so a NaN or an
infinity from a simulator raises at its source, naming the task and the step, instead of
silently reaching the policy, the replay buffer and the learner's loss.

A base class rather than a wrapper, so that ``make_environment`` still returns the adapter
itself (``isinstance(env, DMCEnvironment)``, ``env.physics`` and ``env.gym_env`` keep working)
and an adapter built directly is guarded too.
"""

from __future__ import annotations

import abc
import math
from typing import Any

import dm_env
import numpy as np
from dm_env import specs

# The observation spec's name when its last axis stacks the newest frames (Atari): consecutive
# observations share all but one frame, which replay stores once (actorq.replay.frames).
STACKED_FRAMES = "stacked_frames"


class NonFiniteError(FloatingPointError):
    """An environment returned a NaN or infinite observation or reward.

    Attributes:
      task: the task (or environment) name.
      step: steps taken in the episode when it happened; the reset's observation is step 0.
      field: ``'observation'`` or ``'reward'``.
    """

    def __init__(self, task: str, step: int, field: str, value: Any) -> None:
        self.task = task
        self.step = step
        self.field = field
        super().__init__(
            f"task {task!r} returned a non-finite {field} at step {step} "
            f"(steps since reset; the reset is step 0): {value!r}"
        )


def _all_finite(array: np.ndarray) -> bool:
    if array.dtype.kind in "biu":  # bool/int observations (pixels) cannot be NaN or infinite
        return True
    # A float64 sum of squares is non-finite exactly when an element is NaN or +-inf: squares
    # cannot cancel, and float32 values cannot overflow it. One BLAS dot is cheaper than
    # np.isfinite(...).all() (a boolean temporary plus a reduction) at observation sizes.
    flat = array.reshape(-1).astype(np.float64)
    return math.isfinite(flat.dot(flat))


class CheckedEnvironment(dm_env.Environment):
    """``dm_env.Environment`` whose ``reset``/``step`` reject non-finite observations/rewards.

    Subclasses implement ``_reset()`` and ``_step(action)`` returning dm_env timesteps with an
    array observation (float32, or integer pixels, whose check is skipped), and
    ``observation_spec``/``action_spec``; reward and discount specs are the shared scalar
    float32 ones.
    """

    def __init__(self, name: str) -> None:
        """``name``: the task name used in error messages."""
        self._name = name
        self._episode_step = 0

    @property
    def name(self) -> str:
        """The task name this environment reports in errors."""
        return self._name

    @abc.abstractmethod
    def _reset(self) -> dm_env.TimeStep:
        """Start a new episode (FIRST timestep)."""

    @abc.abstractmethod
    def _step(self, action: Any) -> dm_env.TimeStep:
        """One step with dm_env semantics (a step after LAST resets)."""

    def _check(self, timestep: dm_env.TimeStep) -> dm_env.TimeStep:
        if not _all_finite(timestep.observation):
            raise NonFiniteError(
                self._name, self._episode_step, "observation", timestep.observation
            )
        reward = timestep.reward
        if reward is not None and not math.isfinite(reward):
            raise NonFiniteError(self._name, self._episode_step, "reward", reward)
        return timestep

    def reset(self) -> dm_env.TimeStep:
        """Start a new episode; raises ``NonFiniteError`` on a non-finite observation."""
        timestep = self._reset()
        self._episode_step = 0
        return self._check(timestep)

    def step(self, action: Any) -> dm_env.TimeStep:
        """Step; raises ``NonFiniteError`` on a non-finite observation or reward."""
        timestep = self._step(action)
        self._episode_step = 0 if timestep.first() else self._episode_step + 1
        return self._check(timestep)

    def reward_spec(self) -> specs.Array:
        """Scalar float32 reward."""
        return specs.Array((), np.float32, name="reward")

    def discount_spec(self) -> specs.BoundedArray:
        """Scalar float32 discount in [0, 1]."""
        return specs.BoundedArray((), np.float32, minimum=0.0, maximum=1.0, name="discount")
