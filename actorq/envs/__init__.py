"""Environments for ActorQ: a task registry returning ``dm_env.Environment`` instances.

DMC tasks (continuous control, actions canonicalised to [-1, 1]), gymnasium classic control
(discrete actions) and gymnasium Box-action tasks (MuJoCo v5, Box2D, classic control; actions
canonicalised to [-1, 1] like DMC) share one interface: flat float32 observations, float32
rewards/discounts, and a guard that raises ``NonFiniteError`` (a ``FloatingPointError``) when a
task returns a non-finite observation or reward. The pixel tasks (:func:`is_pixel`: Atari via
ale-py, MinAtar) have discrete actions and uint8 image observations, channels last.
"""

from actorq.envs.base import NonFiniteError
from actorq.envs.batched import BatchedEnvironment, BatchedTimeStep, make_batched_environment
from actorq.envs.registry import (
    TASKS,
    TaskFamily,
    is_discrete,
    is_pixel,
    make_environment,
    task_family,
)

__all__ = [
    "TASKS",
    "BatchedEnvironment",
    "BatchedTimeStep",
    "NonFiniteError",
    "TaskFamily",
    "is_discrete",
    "is_pixel",
    "make_batched_environment",
    "make_environment",
    "task_family",
]
