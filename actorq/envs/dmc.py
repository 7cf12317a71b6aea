"""DeepMind Control Suite tasks as flat-observation, [-1, 1]-action ``dm_env`` environments.

dm_control is imported lazily (and only after :func:`check_mujoco_version` passes) because the
import is ~1 s and because dm-control 1.0.50 breaks on mujoco 4 with an unhelpful
``AttributeError`` ('MjModel' object has no attribute 'flex_vertedge') deep inside model loading.
"""

from __future__ import annotations

import importlib.metadata
import math
import re
import warnings
from types import ModuleType
from typing import Any

import dm_env
import numpy as np
from dm_env import specs

from actorq.envs.base import CheckedEnvironment

_MUJOCO_REQUIREMENT = "mujoco>=3.2,<4"
_MUJOCO_FIX = 'pip install "mujoco<4"'


def _installed_mujoco_version() -> str | None:
    """The installed mujoco distribution version, or ``None`` if it is not installed.

    Read from package metadata rather than ``mujoco.__version__`` so the check runs before any
    MuJoCo/dm_control import (which is exactly what breaks on an incompatible version).
    """
    try:
        return importlib.metadata.version("mujoco")
    except importlib.metadata.PackageNotFoundError:
        return None


def _mujoco_error(version: str | None, detail: str = "") -> RuntimeError:
    installed = f"mujoco {version} is installed" if version else "mujoco is not installed"
    message = f"dm-control needs {_MUJOCO_REQUIREMENT}, but {installed}. Fix: {_MUJOCO_FIX}"
    if detail:
        message += f" ({detail})"
    return RuntimeError(message)


def check_mujoco_version(version: str | None = None) -> None:
    """Raise ``RuntimeError`` unless the installed mujoco satisfies ``mujoco>=3.2,<4``.

    Args:
      version: version string to check; defaults to the installed mujoco's version.
    """
    if version is None:
        version = _installed_mujoco_version()
    if version is None:
        raise _mujoco_error(None)
    match = re.match(r"(\d+)\.(\d+)", version)
    if match is None:
        raise _mujoco_error(version, "unparseable version")
    major_minor = (int(match.group(1)), int(match.group(2)))
    if not (3, 2) <= major_minor < (4, 0):
        raise _mujoco_error(version)


def _load_suite() -> ModuleType:
    """Import ``dm_control.suite`` after the mujoco guard; import failures become RuntimeError."""
    check_mujoco_version()
    try:
        with warnings.catch_warnings():
            # dm_control probes GLFW for rendering at import; on headless machines that only
            # produces a "DISPLAY is missing" warning per process. We never render.
            warnings.filterwarnings("ignore", message=r".*DISPLAY.*")
            from dm_control import suite
    except Exception as exc:  # any import failure means dm_control is unusable here
        raise _mujoco_error(
            _installed_mujoco_version(), f"importing dm_control failed: {exc!r}"
        ) from exc
    return suite


def _flat_dim(spec: Any) -> int:
    return int(np.prod(spec.shape, dtype=np.int64))


class DMCEnvironment(CheckedEnvironment):
    """Wraps a dm_control ``control.Environment``: flat float32 observations, [-1, 1] actions.

    Observations are the task's observation dict concatenated in key order (scalars become
    length 1). Actions are clipped to [-1, 1] and rescaled linearly to the native bounds.
    Step types and discounts pass through unchanged, so the 1000-step time limit still ends
    with discount 1 (a truncation, not a termination).
    """

    def __init__(self, env: Any, name: str = "dmc") -> None:
        """Wrap ``env``, a dm_control ``control.Environment``; ``name`` names it in errors."""
        super().__init__(name)
        self._env = env
        native = env.action_spec()
        self._native_action_spec = native
        low = np.broadcast_to(np.asarray(native.minimum, np.float64), native.shape)
        high = np.broadcast_to(np.asarray(native.maximum, np.float64), native.shape)
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise ValueError("DMCEnvironment needs finite action bounds to canonicalise actions")
        self._act_shape = tuple(native.shape)
        self._act_dim = _flat_dim(native)
        # a_native = low + (a + 1) / 2 * (high - low) = center + a * half_range
        self._center = ((high + low) / 2.0).reshape(-1)
        self._half_range = ((high - low) / 2.0).reshape(-1)
        # Every suite task we register is natively [-1, 1]; skip the affine map then.
        self._identity_scaling = bool(
            np.all(self._center == 0.0) and np.all(self._half_range == 1.0)
        )
        obs_dim = sum(_flat_dim(s) for s in env.observation_spec().values())
        self._observation_spec = specs.Array((obs_dim,), np.float32, name="observation")
        self._action_spec = specs.BoundedArray(
            (self._act_dim,), np.float32, minimum=-1.0, maximum=1.0, name="action"
        )

    @property
    def environment(self) -> Any:
        """The wrapped dm_control environment."""
        return self._env

    @property
    def physics(self) -> Any:
        """The wrapped environment's MuJoCo physics (e.g. to read ``data.ctrl``)."""
        return self._env.physics

    @property
    def native_action_spec(self) -> specs.BoundedArray:
        """The task's own action spec (before canonicalisation to [-1, 1])."""
        return self._native_action_spec

    def _flatten(self, observation: Any) -> np.ndarray:
        return np.concatenate([np.ravel(v) for v in observation.values()], dtype=np.float32)

    def _convert(self, timestep: dm_env.TimeStep) -> dm_env.TimeStep:
        # FIRST carries reward/discount None (dm_env convention); keep it.
        reward = None if timestep.reward is None else np.float32(timestep.reward)
        discount = None if timestep.discount is None else np.float32(timestep.discount)
        return dm_env.TimeStep(
            timestep.step_type, reward, discount, self._flatten(timestep.observation)
        )

    def native_action(self, action: Any) -> np.ndarray:
        """Map a canonical action in [-1, 1] to the task's native action array.

        Out-of-range values (including +-inf) are clipped; NaN raises ``ValueError``.
        """
        a = np.asarray(action, dtype=np.float64)
        if a.size != self._act_dim:
            raise ValueError(f"Expected an action with {self._act_dim} elements, got {a.shape}")
        # Plain ufuncs: np.clip's Python wrapper costs more than the arithmetic at this size.
        a = np.minimum(np.maximum(a.reshape(self._act_dim), -1.0), 1.0)
        if math.isnan(a.sum()):
            # NaN survives clipping; MuJoCo would silently reset the simulation on it.
            raise ValueError(f"Action must not be NaN, got {action}")
        if not self._identity_scaling:
            a = self._center + a * self._half_range
        return a.reshape(self._act_shape)

    def _reset(self) -> dm_env.TimeStep:
        return self._convert(self._env.reset())

    def _step(self, action: Any) -> dm_env.TimeStep:
        # A canonical action; after a LAST timestep dm_control resets (dm_env convention).
        return self._convert(self._env.step(self.native_action(action)))

    def observation_spec(self) -> specs.Array:
        """``Array((obs_dim,), float32, name='observation')``."""
        return self._observation_spec

    def action_spec(self) -> specs.BoundedArray:
        """``BoundedArray((act_dim,), float32, -1, 1, name='action')``."""
        return self._action_spec

    def close(self) -> None:
        """Release the wrapped environment."""
        self._env.close()


def make_dmc_environment(
    domain: str, task: str, seed: int | None = None, name: str | None = None
) -> DMCEnvironment:
    """Load ``domain``/``task`` from the control suite, seeded via ``task_kwargs['random']``.

    ``name`` names the task in errors (default ``'domain/task'``).
    """
    suite = _load_suite()
    env = suite.load(domain, task, task_kwargs={"random": seed})
    return DMCEnvironment(env, name=name or f"{domain}/{task}")
