"""A2C (Mnih et al. 2016, synchronous): n-step advantages, one RMSprop step per batch."""

from actorq.lazy_exports import lazy_getattr

_LAZY = {
    "A2CBuilder": "actorq.agents.a2c.builder",
    "A2CConfig": "actorq.agents.a2c.config",
    "make_learner": "actorq.agents.a2c.learning",
}
__getattr__ = lazy_getattr(__name__, _LAZY)
__all__ = sorted(_LAZY)
