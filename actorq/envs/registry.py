"""Task registry: paper task names -> ``dm_env.Environment`` factories.

Backends are imported lazily inside :func:`make_environment` so that ``import actorq.envs``
stays cheap (configs import :data:`TASKS`) and Gym tasks never pay for dm_control/MuJoCo.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import dm_env

TaskFamily = Literal["dmc", "gym"]

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

TASKS: tuple[str, ...] = (*_DMC_TASKS, *_GYM_TASKS)


def _check_task(task: str) -> None:
    """Raise ``ValueError`` naming every valid task if ``task`` is not registered."""
    if task not in _DMC_TASKS and task not in _GYM_TASKS:
        valid = ", ".join(sorted(TASKS))
        raise ValueError(f"Unknown task {task!r}; valid tasks are: {valid}")


def task_family(task: str) -> TaskFamily:
    """Return which backend implements ``task``: ``'dmc'`` or ``'gym'``."""
    _check_task(task)
    return "dmc" if task in _DMC_TASKS else "gym"


def is_discrete(task: str) -> bool:
    """Whether ``task`` has a discrete action space (the Gym tasks; DMC is continuous)."""
    return task_family(task) == "gym"


def make_environment(task: str, seed: int | None = None) -> dm_env.Environment:
    """Build one environment for ``task`` with flat float32 observations.

    Args:
      task: a name from :data:`TASKS`.
      seed: seeds the task's RNG (DMC ``task_kwargs['random']``; gymnasium's first ``reset``).
        ``None`` draws fresh OS entropy.

    Returns:
      A ``dm_env.Environment``. DMC tasks take actions in ``[-1, 1]``; Gym tasks take an int
      index in ``[0, num_values)``.

    Raises:
      ValueError: unknown task name.
      RuntimeError: a DMC task was requested but dm_control cannot run with the installed mujoco.
    """
    if task_family(task) == "dmc":
        from actorq.envs import dmc

        domain, dmc_task = _DMC_TASKS[task]
        return dmc.make_dmc_environment(domain, dmc_task, seed=seed)

    from actorq.envs import gym_adapter

    return gym_adapter.make_gym_environment(_GYM_TASKS[task], seed=seed)
