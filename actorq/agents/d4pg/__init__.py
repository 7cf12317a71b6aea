"""D4PG (distributed distributional DDPG) for DeepMind Control tasks."""

import importlib
from typing import Any

from actorq.agents.d4pg.builder import D4PGBuilder
from actorq.agents.d4pg.config import D4PGConfig

# The learner (JAX) loads on first use: actor processes build the builder without it.
_LAZY = ("D4PGLearner", "critic_loss", "d4pg_losses", "policy_loss")


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("actorq.agents.d4pg.learning"), name)


__all__ = ["D4PGBuilder", "D4PGConfig", *_LAZY]
