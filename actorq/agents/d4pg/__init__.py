"""D4PG (distributed distributional DDPG) for DeepMind Control tasks."""

from actorq.agents.d4pg.builder import D4PGBuilder
from actorq.agents.d4pg.config import D4PGConfig
from actorq.lazy_exports import lazy_getattr

# The learner (JAX) loads on first use: actor processes build the builder without it.
_LAZY = dict.fromkeys(("D4PGLearner", "critic_loss", "d4pg_losses", "policy_loss"),
                      "actorq.agents.d4pg.learning")
__getattr__ = lazy_getattr(__name__, _LAZY)
__all__ = ["D4PGBuilder", "D4PGConfig", *_LAZY]
