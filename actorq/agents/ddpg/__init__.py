"""DDPG (Lillicrap et al. 2016; as in CleanRL's ``ddpg_continuous_action.py``): deterministic tanh
policy, scalar critic, Gaussian exploration, Polyak targets, delayed policy updates."""

from actorq.agents.ddpg.builder import DDPGBuilder
from actorq.agents.ddpg.config import DDPGConfig
from actorq.lazy_exports import lazy_getattr

_LAZY = dict.fromkeys(("DDPGLearner", "critic_loss", "policy_loss"),
                      "actorq.agents.ddpg.learning")
__getattr__ = lazy_getattr(__name__, _LAZY)
__all__ = ["DDPGBuilder", "DDPGConfig", *_LAZY]
