"""Environments for ActorQ: a task registry returning ``dm_env.Environment`` instances.

DMC tasks (continuous control, actions canonicalised to [-1, 1]) and gymnasium classic control
(discrete actions) share one interface: flat float32 observations, float32 rewards/discounts.
"""

from actorq.envs.batched import BatchedEnvironment, BatchedTimeStep, make_batched_environment
from actorq.envs.registry import TASKS, TaskFamily, is_discrete, make_environment, task_family

__all__ = [
    "TASKS",
    "BatchedEnvironment",
    "BatchedTimeStep",
    "TaskFamily",
    "is_discrete",
    "make_batched_environment",
    "make_environment",
    "task_family",
]
