"""k environments of one task stepped together, with per-env dm_env auto-reset.

Written directly over our ``dm_env`` environments rather than gymnasium's vector envs: gymnasium
1.x changed its autoreset API (no ``final_observation``), and DMC tasks are not gymnasium envs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import dm_env
import numpy as np
from dm_env import specs

from actorq.envs.registry import make_environment

_FIRST = int(dm_env.StepType.FIRST)
_LAST = int(dm_env.StepType.LAST)


class BatchedTimeStep(NamedTuple):
    """Timesteps of k environments as stacked numpy arrays.

    Attributes:
      step_type: [k] int8, values of ``dm_env.StepType``.
      reward: [k] float32; 0 where the step is FIRST.
      discount: [k] float32; 1 where the step is FIRST.
      observation: [k, obs_dim] float32.
    """

    step_type: np.ndarray
    reward: np.ndarray
    discount: np.ndarray
    observation: np.ndarray

    def first(self) -> np.ndarray:
        """[k] bool: which environments just started an episode."""
        return self.step_type == _FIRST

    def mid(self) -> np.ndarray:
        """[k] bool: which environments are mid-episode."""
        return self.step_type == int(dm_env.StepType.MID)

    def last(self) -> np.ndarray:
        """[k] bool: which environments just ended an episode."""
        return self.step_type == _LAST

    def index(self, i: int) -> dm_env.TimeStep:
        """Environment ``i``'s timestep; FIRST has reward/discount ``None`` as in dm_env."""
        step_type = dm_env.StepType(int(self.step_type[i]))
        if step_type.first():
            return dm_env.TimeStep(step_type, None, None, self.observation[i])
        return dm_env.TimeStep(step_type, self.reward[i], self.discount[i], self.observation[i])


class BatchedEnvironment:
    """Steps ``num_envs`` ``dm_env`` environments of one task together.

    Each environment follows its own dm_env semantics: once it returns LAST, the next
    ``step`` resets it and returns its FIRST timestep, ignoring its action, while the other
    environments keep stepping.
    """

    def __init__(self, envs: Sequence[dm_env.Environment]) -> None:
        """Batch ``envs``, which must share observation and action specs."""
        if len(envs) < 1:
            raise ValueError("BatchedEnvironment needs at least one environment")
        self._envs = list(envs)
        self._observation_spec = self._envs[0].observation_spec()
        self._action_spec = self._envs[0].action_spec()
        for env in self._envs[1:]:
            if env.observation_spec() != self._observation_spec:
                raise ValueError("All environments must share one observation spec")
            if env.action_spec() != self._action_spec:
                raise ValueError("All environments must share one action spec")
        # Unstarted envs reset on their first step, as a single dm_env would.
        self._needs_reset = np.ones(len(self._envs), dtype=bool)

    @property
    def num_envs(self) -> int:
        """Number of environments in the batch."""
        return len(self._envs)

    @property
    def envs(self) -> tuple[dm_env.Environment, ...]:
        """The underlying single environments."""
        return tuple(self._envs)

    def observation_spec(self) -> specs.Array:
        """Single-environment observation spec."""
        return self._observation_spec

    def action_spec(self) -> specs.Array:
        """Single-environment action spec."""
        return self._action_spec

    def _stack(self, timesteps: Sequence[dm_env.TimeStep]) -> BatchedTimeStep:
        k = len(timesteps)
        step_type = np.empty(k, dtype=np.int8)
        reward = np.zeros(k, dtype=np.float32)
        discount = np.ones(k, dtype=np.float32)
        # Integer observations (uint8 frames) keep their dtype: 4x smaller than float32.
        dtype = self._observation_spec.dtype
        dtype = dtype if np.dtype(dtype).kind in "iub" else np.float32
        observation = np.empty((k, *self._observation_spec.shape), dtype=dtype)
        for i, ts in enumerate(timesteps):
            step_type[i] = ts.step_type
            if ts.reward is not None:
                reward[i] = ts.reward
            if ts.discount is not None:
                discount[i] = ts.discount
            observation[i] = ts.observation
        self._needs_reset = step_type == _LAST
        return BatchedTimeStep(step_type, reward, discount, observation)

    def reset(self) -> BatchedTimeStep:
        """Reset every environment; all step types are FIRST."""
        return self._stack([env.reset() for env in self._envs])

    def step(self, actions: Any) -> BatchedTimeStep:
        """Step each environment with ``actions[i]`` (shape ``[k, ...]``).

        An environment whose previous timestep was LAST is reset instead (its action is
        ignored) and contributes its FIRST timestep.
        """
        actions = np.asarray(actions)
        if actions.ndim < 1 or actions.shape[0] != len(self._envs):
            raise ValueError(
                f"Expected actions with leading dimension {len(self._envs)}, got {actions.shape}"
            )
        timesteps = [
            env.reset() if needs_reset else env.step(action)
            for env, needs_reset, action in zip(self._envs, self._needs_reset, actions, strict=True)
        ]
        return self._stack(timesteps)

    def close(self) -> None:
        """Close every environment."""
        for env in self._envs:
            env.close()


def make_batched_environment(
    task: str, num_envs: int, seed: int | None = None
) -> BatchedEnvironment:
    """Build ``num_envs`` environments of ``task`` seeded ``seed, seed + 1, ...`` (or all None).

    Raises:
      ValueError: unknown task or ``num_envs < 1``.
    """
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    seeds = [None if seed is None else seed + i for i in range(num_envs)]
    return BatchedEnvironment([make_environment(task, seed=s) for s in seeds])
