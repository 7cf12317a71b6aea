"""DQN (double Q-learning, n-step, optional prioritized replay) for Gym classic control."""

import importlib
from typing import Any

from actorq.agents.dqn.builder import DQNBuilder
from actorq.agents.dqn.config import DQNConfig

# The learner (JAX) loads on first use: actor processes build the builder without it.
_LAZY = ("DQNLearner", "double_q_loss")


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("actorq.agents.dqn.learning"), name)


__all__ = ["DQNBuilder", "DQNConfig", *_LAZY]
