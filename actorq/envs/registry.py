"""Task registry: paper task names -> ``dm_env.Environment`` factories.

Backends are imported lazily inside :func:`make_environment` so that ``import actorq.envs``
stays cheap (configs import :data:`TASKS`) and each task pays only for its own backend: classic
control never imports dm_control, MuJoCo, Box2D, ale_py or minatar, and the gymnasium MuJoCo
tasks never import dm_control.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import dm_env

# "dmc": DeepMind Control Suite (continuous, actions in [-1, 1]); "gym": gymnasium classic
# control with discrete actions; "gym_continuous": gymnasium Box-action tasks (MuJoCo, Box2D,
# classic control), actions in [-1, 1] rescaled to the env's bounds; "atari": ALE games with
# the Nature-DQN preprocessing (uint8 [84, 84, 4] frames, discrete actions); "minatar": MinAtar
# games (uint8 [10, 10, C] grids, discrete actions).
TaskFamily = Literal["dmc", "gym", "gym_continuous", "atari", "minatar"]

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

# Task name -> gymnasium environment id (discrete actions): the paper's classic control, plus
# LunarLander (Box2D, needs box2d) as a discrete Box2D task for DQN.
_GYM_TASKS: Mapping[str, str] = {
    "cartpole": "CartPole-v1",
    "acrobot": "Acrobot-v1",
    "mountaincar": "MountainCar-v0",
    "lunarlander": "LunarLander-v3",
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
    "lunarlander_continuous": "LunarLanderContinuous-v3",
}

# Task name -> ALE game (the gymnasium id is ALE/<game>-v5).
_ATARI_TASKS: Mapping[str, str] = {
    "pong": "Pong",
    "breakout": "Breakout",
    "space_invaders": "SpaceInvaders",
    "beam_rider": "BeamRider",
    "ms_pacman": "MsPacman",
    "qbert": "Qbert",
    "seaquest": "Seaquest",
}

# Task name -> MinAtar game (minatar.Environment's name).
_MINATAR_TASKS: Mapping[str, str] = {
    "minatar_breakout": "breakout",
    "minatar_space_invaders": "space_invaders",
    "minatar_seaquest": "seaquest",
    "minatar_asterix": "asterix",
    "minatar_freeway": "freeway",
}

_FAMILIES: Mapping[str, TaskFamily] = {
    **dict.fromkeys(_DMC_TASKS, "dmc"),
    **dict.fromkeys(_GYM_TASKS, "gym"),
    **dict.fromkeys(_GYM_CONTINUOUS_TASKS, "gym_continuous"),
    **dict.fromkeys(_ATARI_TASKS, "atari"),
    **dict.fromkeys(_MINATAR_TASKS, "minatar"),
}

_DISCRETE_FAMILIES = frozenset({"gym", "atari", "minatar"})
_PIXEL_FAMILIES = frozenset({"atari", "minatar"})

TASKS: tuple[str, ...] = tuple(_FAMILIES)


def tasks_of_family(family: TaskFamily) -> tuple[str, ...]:
    """The registered tasks of one family, in registry order (e.g. every ``"atari"`` game)."""
    return tuple(task for task in TASKS if _FAMILIES[task] == family)


def _check_task(task: str) -> None:
    """Raise ``ValueError`` naming every valid task if ``task`` is not registered."""
    if task not in _FAMILIES:
        valid = ", ".join(sorted(TASKS))
        raise ValueError(f"Unknown task {task!r}; valid tasks are: {valid}")


def task_family(task: str) -> TaskFamily:
    """Return which backend implements ``task``: ``'dmc'``, ``'gym'`` (discrete),
    ``'gym_continuous'``, ``'atari'`` or ``'minatar'``."""
    _check_task(task)
    return _FAMILIES[task]


def is_discrete(task: str) -> bool:
    """Whether ``task`` has a discrete action space (``'gym'``, ``'atari'``, ``'minatar'``)."""
    return task_family(task) in _DISCRETE_FAMILIES


def minatar_game(task: str) -> str:
    """The ``minatar.Environment`` game of MinAtar ``task`` (``minatar_breakout`` -> ``breakout``).

    Raises:
      ValueError: ``task`` is not a registered MinAtar task.
    """
    if task_family(task) != "minatar":
        raise ValueError(
            f"{task!r} is not a MinAtar task; MinAtar tasks: {', '.join(_MINATAR_TASKS)}")
    return _MINATAR_TASKS[task]


def is_pixel(task: str) -> bool:
    """Whether ``task`` has uint8 image observations (``'atari'`` and ``'minatar'``)."""
    return task_family(task) in _PIXEL_FAMILIES


def make_environment(
    task: str, seed: int | None = None, evaluation: bool = False
) -> dm_env.Environment:
    """Build one environment for ``task``.

    Observations are flat float32 vectors, except for the pixel tasks (:func:`is_pixel`):
    Atari gives uint8 ``[84, 84, 4]`` and MinAtar uint8 ``[10, 10, C]``.

    Args:
      task: a name from :data:`TASKS`.
      seed: seeds the task's RNG (DMC ``task_kwargs['random']``; gymnasium's first ``reset``;
        ALE's first reset; MinAtar's ``RandomState``). ``None`` draws fresh OS entropy.
      evaluation: Atari only (ignored by every other task): raw rewards and no discount cut at a
        life loss, instead of training mode's sign-clipped rewards and discount 0 at a life
        loss (see :mod:`actorq.envs.atari`). Evaluators pass ``True``.

    Returns:
      A ``dm_env.Environment`` (an :class:`~actorq.envs.base.CheckedEnvironment`: a non-finite
      observation or reward raises ``FloatingPointError`` naming the task and step). DMC and
      continuous Gym tasks take float32 actions in ``[-1, 1]``; discrete Gym, Atari and MinAtar
      tasks take an int index in ``[0, num_values)``.

    Raises:
      ValueError: unknown task name.
      RuntimeError: a DMC task was requested but dm_control cannot run with the installed mujoco.
    """
    family = task_family(task)
    if family == "dmc":
        from actorq.envs import dmc

        domain, dmc_task = _DMC_TASKS[task]
        return dmc.make_dmc_environment(domain, dmc_task, seed=seed, name=task)
    if family == "atari":
        from actorq.envs import atari

        return atari.make_atari_environment(
            _ATARI_TASKS[task], seed=seed, name=task, evaluation=evaluation
        )
    if family == "minatar":
        from actorq.envs import minatar_env

        return minatar_env.make_minatar_environment(_MINATAR_TASKS[task], seed=seed, name=task)

    from actorq.envs import gym_adapter

    if family == "gym":
        return gym_adapter.make_gym_environment(_GYM_TASKS[task], seed=seed, name=task)
    return gym_adapter.make_gym_continuous_environment(
        _GYM_CONTINUOUS_TASKS[task], seed=seed, name=task
    )
