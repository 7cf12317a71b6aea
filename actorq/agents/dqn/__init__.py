"""DQN (double Q-learning, n-step, optional prioritized replay) for Gym classic control."""

from actorq.agents.dqn.builder import DQNBuilder
from actorq.agents.dqn.config import DQNConfig
from actorq.lazy_exports import lazy_getattr

# The learner (JAX) loads on first use: actor processes build the builder without it.
_LAZY = dict.fromkeys(("DQNLearner", "q_loss"), "actorq.agents.dqn.learning")
__getattr__ = lazy_getattr(__name__, _LAZY)
__all__ = ["DQNBuilder", "DQNConfig", *_LAZY]
