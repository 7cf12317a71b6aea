"""PPO (Schulman et al. 2017): clipped surrogate, GAE, epochs of minibatches, one jitted update."""

from actorq.lazy_exports import lazy_getattr

_LAZY = {
    "PPOBuilder": "actorq.agents.ppo.builder",
    "PPOConfig": "actorq.agents.ppo.config",
    "make_learner": "actorq.agents.ppo.learning",
}
__getattr__ = lazy_getattr(__name__, _LAZY)
__all__ = sorted(_LAZY)
