"""D4PG (distributed distributional DDPG) for DeepMind Control tasks."""

from actorq.agents.d4pg.builder import D4PGBuilder
from actorq.agents.d4pg.config import D4PGConfig
from actorq.agents.d4pg.learning import D4PGLearner, critic_loss, d4pg_losses, policy_loss

__all__ = ["D4PGBuilder", "D4PGConfig", "D4PGLearner", "critic_loss", "d4pg_losses", "policy_loss"]
