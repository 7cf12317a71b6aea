"""Gymnasium environments adapted to the ``dm_env`` interface.

:class:`GymAdapter` takes ``Discrete`` action spaces (int index actions);
:class:`GymContinuousAdapter` takes ``Box`` action spaces and, like the DMC tasks, exposes
canonical actions in [-1, 1] that it rescales to the env's bounds. Both share the episode
semantics of :class:`_GymEnvironment` and the non-finite guard of
:class:`~actorq.envs.base.CheckedEnvironment`.
"""

from __future__ import annotations

import abc
import math
import os
import threading
import warnings
from typing import Any

import dm_env
import gymnasium as gym
import numpy as np
from dm_env import specs

from actorq.envs.base import CheckedEnvironment


def discrete_action_index(action: Any, num_actions: int) -> int:
    """The int index of a discrete dm_env action: a scalar or shape-(1,) integer in
    ``[0, num_actions)``; anything else raises ``ValueError``."""
    a = np.asarray(action)
    if a.shape not in ((), (1,)):
        raise ValueError(f"Expected a scalar or shape-(1,) action, got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"Expected an integer action, got dtype {a.dtype}")
    index = int(a.reshape(()))
    if not 0 <= index < num_actions:
        raise ValueError(f"Action {index} outside [0, {num_actions})")
    return index


class _GymEnvironment(CheckedEnvironment):
    """dm_env episode semantics over a gymnasium env; subclasses convert actions.

    - The first ``reset()`` seeds the env with ``seed``; later resets continue its RNG, so a
      seeded run is reproducible end to end without repeating episodes.
    - ``terminated`` -> ``dm_env.termination`` (discount 0); ``truncated`` (time limit) ->
      ``dm_env.truncation`` (discount 1). If both are set, termination wins.
    - ``step()`` after a LAST timestep (or before any reset) resets, as dm_env expects.
    - Observations are flattened to float32 (always copied: some envs return views); a subclass
      with other observations (the Atari adapter's uint8 frames) overrides
      :meth:`_convert_observation` and sets ``_observation_spec``.
    """

    def __init__(self, env: gym.Env, seed: int | None = None, name: str | None = None) -> None:
        """Wrap ``env``; ``seed`` is used once, on the first reset; ``name`` names it in errors
        (default: the gymnasium id)."""
        if env.observation_space.shape is None:
            raise TypeError(
                f"{type(self).__name__} needs an array observation space, "
                f"got {env.observation_space}"
            )
        if name is None:
            name = env.spec.id if env.spec is not None else type(env.unwrapped).__name__
        super().__init__(name)
        self._env = env
        self._seed = seed
        self._seeded = False
        self._reset_next_step = True
        obs_dim = int(np.prod(env.observation_space.shape, dtype=np.int64))
        self._observation_spec = specs.Array((obs_dim,), np.float32, name="observation")

    @property
    def gym_env(self) -> gym.Env:
        """The wrapped gymnasium environment."""
        return self._env

    def _convert_observation(self, observation: Any) -> np.ndarray:
        """The dm_env observation for a gymnasium one: a flat float32 copy."""
        return np.array(observation, dtype=np.float32).reshape(-1)

    @abc.abstractmethod
    def _gym_action(self, action: Any) -> Any:
        """The gymnasium action for a dm_env action (validates it)."""

    def _reset(self) -> dm_env.TimeStep:
        if self._seeded:
            observation, _ = self._env.reset()
        else:
            observation, _ = self._env.reset(seed=self._seed)
            self._seeded = True
        self._reset_next_step = False
        return dm_env.restart(self._convert_observation(observation))

    def _step(self, action: Any) -> dm_env.TimeStep:
        if self._reset_next_step:
            return self._reset()
        gym_action = self._gym_action(action)
        observation, reward, terminated, truncated, _ = self._env.step(gym_action)
        obs = self._convert_observation(observation)
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

    def close(self) -> None:
        """Close the wrapped gymnasium env."""
        self._env.close()


class GymAdapter(_GymEnvironment):
    """``dm_env.Environment`` over a gymnasium env with a ``Discrete`` action space.

    Actions are int indices in ``[0, n)`` (gymnasium's ``start`` offset is added back).
    """

    def __init__(self, env: gym.Env, seed: int | None = None, name: str | None = None) -> None:
        """Wrap ``env``; ``seed`` is used once, on the first reset."""
        if not isinstance(env.action_space, gym.spaces.Discrete):
            raise TypeError(f"GymAdapter needs a Discrete action space, got {env.action_space}")
        super().__init__(env, seed=seed, name=name)
        self._num_actions = int(env.action_space.n)
        # gymnasium's Discrete may start at a non-zero value; dm_env actions are always 0-based.
        self._action_start = int(env.action_space.start)
        self._action_spec = specs.DiscreteArray(self._num_actions, dtype=np.int32, name="action")

    def _gym_action(self, action: Any) -> int:
        return discrete_action_index(action, self._num_actions) + self._action_start

    def action_spec(self) -> specs.DiscreteArray:
        """``DiscreteArray(num_values=n, dtype=int32, name='action')``."""
        return self._action_spec


class GymContinuousAdapter(_GymEnvironment):
    """``dm_env.Environment`` over a gymnasium env with a bounded ``Box`` action space.

    The action spec is ``BoundedArray((act_dim,), float32, -1, 1)``, the convention of the DMC
    tasks. An action is clipped to [-1, 1] and mapped linearly onto the Box bounds,
    ``low + (a + 1) / 2 * (high - low)`` (so -1 -> low, 0 -> the midpoint, 1 -> high), then cast
    to the Box dtype. NaN actions raise ``ValueError``.
    """

    def __init__(self, env: gym.Env, seed: int | None = None, name: str | None = None) -> None:
        """Wrap ``env``; ``seed`` is used once, on the first reset."""
        space = env.action_space
        if not isinstance(space, gym.spaces.Box):
            raise TypeError(f"GymContinuousAdapter needs a Box action space, got {space}")
        low = np.asarray(space.low, np.float64)
        high = np.asarray(space.high, np.float64)
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise ValueError(f"GymContinuousAdapter needs finite action bounds, got {space}")
        super().__init__(env, seed=seed, name=name)
        self._act_shape = tuple(space.shape)
        self._act_dim = int(np.prod(space.shape, dtype=np.int64))
        self._act_dtype = space.dtype
        self._low = low.reshape(-1)
        self._high = high.reshape(-1)
        self._center = (self._high + self._low) / 2.0
        self._half_range = (self._high - self._low) / 2.0
        # center + a * half_range is monotone in a, so it stays inside [low, high] whenever the
        # endpoints map exactly (true for float32 bounds); otherwise rounding could step an ulp
        # past a bound, and the scaled action is clipped as well.
        self._clip_scaled = not (
            np.array_equal(self._center - self._half_range, self._low)
            and np.array_equal(self._center + self._half_range, self._high)
        )
        self._minus_one = np.full(self._act_dim, -1.0)
        self._one = np.full(self._act_dim, 1.0)
        self._identity_scaling = bool(
            np.all(self._center == 0.0) and np.all(self._half_range == 1.0)
        )
        self._action_spec = specs.BoundedArray(
            (self._act_dim,), np.float32, minimum=-1.0, maximum=1.0, name="action"
        )

    def native_action(self, action: Any) -> np.ndarray:
        """The gymnasium action for a canonical action in [-1, 1] (clipped; NaN raises)."""
        a = np.asarray(action, dtype=np.float64)
        if a.size != self._act_dim:
            raise ValueError(f"Expected an action with {self._act_dim} elements, got {a.shape}")
        # Plain ufuncs with array bounds: np.clip's Python wrapper and scalar arguments cost
        # more than the arithmetic at this size.
        a = np.minimum(np.maximum(a.reshape(self._act_dim), self._minus_one), self._one)
        if math.isnan(a.dot(a)):  # NaN survives the clipping (and only NaN can remain)
            raise ValueError(f"Action must not be NaN, got {action}")
        if not self._identity_scaling:
            a = self._center + a * self._half_range
            if self._clip_scaled:
                a = np.minimum(np.maximum(a, self._low), self._high)
        return a.astype(self._act_dtype).reshape(self._act_shape)

    _gym_action = native_action

    def action_spec(self) -> specs.BoundedArray:
        """``BoundedArray((act_dim,), float32, -1, 1, name='action')``."""
        return self._action_spec


# MuJoCo's compiler deprecation of an attribute that gymnasium's own model files use
# (half_cheetah.xml's settotalmass); nothing a user can act on.
_IGNORED_MUJOCO_WARNINGS = ("compiler attribute 'settotalmass' is deprecated",)
_mujoco_warning_lock = threading.Lock()


def _forward_mujoco_warning(message: str) -> None:
    if not message.startswith(_IGNORED_MUJOCO_WARNINGS):
        warnings.warn(f"MuJoCo: {message}", RuntimeWarning, stacklevel=2)


def _gym_make(env_id: str, **kwargs: Any) -> gym.Env:
    # gymnasium.envs.box2d imports pygame, whose import prints a banner to stdout.
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    entry_point = gym.spec(env_id).entry_point
    if not (isinstance(entry_point, str) and entry_point.startswith("gymnasium.envs.mujoco")):
        with warnings.catch_warnings():
            # Box2D's SWIG bindings raise DeprecationWarnings when first imported.
            warnings.filterwarnings(
                "ignore", r"builtin type .* has no __module__ attribute", DeprecationWarning
            )
            return gym.make(env_id, **kwargs)
    import mujoco

    # MuJoCo's default warning handler prints and appends to ./MUJOCO_LOG.TXT, so every
    # HalfCheetah built would leave that file in the working directory. While the model loads,
    # route warnings to Python's warnings instead (the handler is process-global: hence the lock
    # and the restore).
    with _mujoco_warning_lock:
        previous = mujoco.get_mju_user_warning()
        mujoco.set_mju_user_warning(_forward_mujoco_warning)
        try:
            return gym.make(env_id, **kwargs)
        finally:
            mujoco.set_mju_user_warning(previous)


def make_gym_environment(
    env_id: str, seed: int | None = None, name: str | None = None
) -> GymAdapter:
    """``gymnasium.make(env_id)`` (with its registered time limit) wrapped as a ``GymAdapter``."""
    return GymAdapter(_gym_make(env_id), seed=seed, name=name)


def make_gym_continuous_environment(
    env_id: str,
    seed: int | None = None,
    name: str | None = None,
    max_episode_steps: int | None = None,
) -> GymContinuousAdapter:
    """``gymnasium.make(env_id)`` wrapped as a ``GymContinuousAdapter``.

    ``max_episode_steps``: ``None`` keeps the registered time limit (gymnasium's ``TimeLimit``);
    an int replaces it.
    """
    env = _gym_make(env_id, max_episode_steps=max_episode_steps)
    return GymContinuousAdapter(env, seed=seed, name=name)
