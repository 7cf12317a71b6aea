"""Gymnasium discrete-action environments adapted to the ``dm_env`` interface."""

from __future__ import annotations

from typing import Any

import dm_env
import gymnasium as gym
import numpy as np
from dm_env import specs


class GymAdapter(dm_env.Environment):
    """``dm_env.Environment`` over a gymnasium env with a ``Discrete`` action space.

    - The first ``reset()`` seeds the env with ``seed``; later resets continue its RNG, so a
      seeded run is reproducible end to end without repeating episodes.
    - ``terminated`` -> ``dm_env.termination`` (discount 0); ``truncated`` (time limit) ->
      ``dm_env.truncation`` (discount 1). If both are set, termination wins.
    - ``step()`` after a LAST timestep (or before any reset) resets, as dm_env expects.
    """

    def __init__(self, env: gym.Env, seed: int | None = None) -> None:
        """Wrap ``env``; ``seed`` is used once, on the first reset."""
        if not isinstance(env.action_space, gym.spaces.Discrete):
            raise TypeError(f"GymAdapter needs a Discrete action space, got {env.action_space}")
        if env.observation_space.shape is None:
            raise TypeError(
                f"GymAdapter needs an array observation space, got {env.observation_space}"
            )
        self._env = env
        self._seed = seed
        self._seeded = False
        self._reset_next_step = True
        self._num_actions = int(env.action_space.n)
        # gymnasium's Discrete may start at a non-zero value; dm_env actions are always 0-based.
        self._action_start = int(env.action_space.start)
        obs_dim = int(np.prod(env.observation_space.shape, dtype=np.int64))
        self._observation_spec = specs.Array((obs_dim,), np.float32, name="observation")
        self._action_spec = specs.DiscreteArray(self._num_actions, dtype=np.int32, name="action")

    @property
    def gym_env(self) -> gym.Env:
        """The wrapped gymnasium environment."""
        return self._env

    @staticmethod
    def _flatten(observation: Any) -> np.ndarray:
        # Always copy: some envs return views of internal state.
        return np.array(observation, dtype=np.float32).reshape(-1)

    def _action_index(self, action: Any) -> int:
        a = np.asarray(action)
        if a.shape not in ((), (1,)):
            raise ValueError(f"Expected a scalar or shape-(1,) action, got shape {a.shape}")
        if not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"Expected an integer action, got dtype {a.dtype}")
        index = int(a.reshape(()))
        if not 0 <= index < self._num_actions:
            raise ValueError(f"Action {index} outside [0, {self._num_actions})")
        return index

    def reset(self) -> dm_env.TimeStep:
        """Start a new episode; the very first reset applies the seed."""
        if self._seeded:
            observation, _ = self._env.reset()
        else:
            observation, _ = self._env.reset(seed=self._seed)
            self._seeded = True
        self._reset_next_step = False
        return dm_env.restart(self._flatten(observation))

    def step(self, action: Any) -> dm_env.TimeStep:
        """Step with an int action index; after LAST this resets and ignores ``action``."""
        if self._reset_next_step:
            return self.reset()
        index = self._action_index(action)
        observation, reward, terminated, truncated, _ = self._env.step(index + self._action_start)
        obs = self._flatten(observation)
        reward = np.float32(reward)
        if terminated:
            self._reset_next_step = True
            # Built directly: dm_env.termination would give a Python-float discount.
            return dm_env.TimeStep(dm_env.StepType.LAST, reward, np.float32(0.0), obs)
        if truncated:
            self._reset_next_step = True
            return dm_env.truncation(reward, obs, discount=np.float32(1.0))
        return dm_env.transition(reward, obs, discount=np.float32(1.0))

    def observation_spec(self) -> specs.Array:
        """``Array((obs_dim,), float32, name='observation')``."""
        return self._observation_spec

    def action_spec(self) -> specs.DiscreteArray:
        """``DiscreteArray(num_values=n, dtype=int32, name='action')``."""
        return self._action_spec

    def reward_spec(self) -> specs.Array:
        """Scalar float32 reward."""
        return specs.Array((), np.float32, name="reward")

    def discount_spec(self) -> specs.BoundedArray:
        """Scalar float32 discount in [0, 1]."""
        return specs.BoundedArray((), np.float32, minimum=0.0, maximum=1.0, name="discount")

    def close(self) -> None:
        """Close the wrapped gymnasium env."""
        self._env.close()


def make_gym_environment(env_id: str, seed: int | None = None) -> GymAdapter:
    """``gymnasium.make(env_id)`` (with its registered time limit) wrapped as a ``GymAdapter``."""
    return GymAdapter(gym.make(env_id), seed=seed)
