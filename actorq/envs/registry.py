"""Task registry: paper task names -> ``dm_env.Environment`` factories.

Backends are imported lazily inside :func:`make_environment` so that ``import actorq.envs``
stays cheap (configs import :data:`TASKS`) and each task pays only for its own backend: classic
control never imports dm_control, MuJoCo or Box2D, and the gymnasium MuJoCo tasks never import
dm_control.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import dm_env

# "dmc": DeepMind Control Suite (continuous, actions in [-1, 1]); "gym": gymnasium classic
# control with discrete actions; "gym_continuous": gymnasium Box-action tasks (MuJoCo, Box2D,
# classic control), actions in [-1, 1] rescaled to the env's bounds.
TaskFamily = Literal["dmc", "gym", "gym_continuous"]

# Paper task name -> (dm_control domain, task).
_DMC_TASKS: Mapping[str, tuple[str, str]] = {
    "cartpole_balance": ("cartpole", "balance"),
    "walker_stand": ("walker", "stand"),
    "hopper_stand": ("hopper", "stand"),
    "reacher_hard": ("reacher", "hard"),
    "cheetah_run": ("cheetah", "run"),
    "finger_spin": ("finger", "spin"),
    "humanoid_stand": ("humanoid", "stand"),
    "humanoid_walk": ("humanoid", "walk"),
}

# Paper task name -> gymnasium environment id (classic control, discrete actions).
_GYM_TASKS: Mapping[str, str] = {
    "cartpole": "CartPole-v1",
    "acrobot": "Acrobot-v1",
    "mountaincar": "MountainCar-v0",
}

# Paper task name -> gymnasium environment id (Box actions). MuJoCo v5 needs mujoco and
# imageio; BipedalWalker needs box2d and pygame (gymnasium's [mujoco] and [box2d] extras).
_GYM_CONTINUOUS_TASKS: Mapping[str, str] = {
    "halfcheetah": "HalfCheetah-v5",
    "walker2d": "Walker2d-v5",
    "hopper": "Hopper-v5",
    "bipedalwalker": "BipedalWalker-v3",
    "mountaincar_continuous": "MountainCarContinuous-v0",
    "pendulum": "Pendulum-v1",
}

_FAMILIES: Mapping[str, TaskFamily] = {
    **dict.fromkeys(_DMC_TASKS, "dmc"),
    **dict.fromkeys(_GYM_TASKS, "gym"),
    **dict.fromkeys(_GYM_CONTINUOUS_TASKS, "gym_continuous"),
}

TASKS: tuple[str, ...] = tuple(_FAMILIES)


def _check_task(task: str) -> None:
    """Raise ``ValueError`` naming every valid task if ``task`` is not registered."""
    if task not in _FAMILIES:
        valid = ", ".join(sorted(TASKS))
        raise ValueError(f"Unknown task {task!r}; valid tasks are: {valid}")


def task_family(task: str) -> TaskFamily:
    """Return which backend implements ``task``: ``'dmc'``, ``'gym'`` (discrete) or
    ``'gym_continuous'``."""
    _check_task(task)
    return _FAMILIES[task]


def is_discrete(task: str) -> bool:
    """Whether ``task`` has a discrete action space (only the ``'gym'`` family does)."""
    return task_family(task) == "gym"


def make_environment(task: str, seed: int | None = None) -> dm_env.Environment:
    """Build one environment for ``task`` with flat float32 observations.

    Args:
      task: a name from :data:`TASKS`.
      seed: seeds the task's RNG (DMC ``task_kwargs['random']``; gymnasium's first ``reset``).
        ``None`` draws fresh OS entropy.

    Returns:
      A ``dm_env.Environment`` (an :class:`~actorq.envs.base.CheckedEnvironment`: a non-finite
      observation or reward raises ``FloatingPointError`` naming the task and step). DMC and
      continuous Gym tasks take float32 actions in ``[-1, 1]``; discrete Gym tasks take an int
      index in ``[0, num_values)``.

    Raises:
      ValueError: unknown task name.
      RuntimeError: a DMC task was requested but dm_control cannot run with the installed mujoco.
    """
    family = task_family(task)
    if family == "dmc":
        from actorq.envs import dmc

        domain, dmc_task = _DMC_TASKS[task]
        return dmc.make_dmc_environment(domain, dmc_task, seed=seed, name=task)

    from actorq.envs import gym_adapter

    if family == "gym":
        return gym_adapter.make_gym_environment(_GYM_TASKS[task], seed=seed, name=task)
    return gym_adapter.make_gym_continuous_environment(
        _GYM_CONTINUOUS_TASKS[task], seed=seed, name=task
    )
