"""SAC (soft actor-critic, Haarnoja et al.) with an fp32, fp16 or bf16 learner."""

from actorq.agents.sac.builder import SACBuilder
from actorq.agents.sac.config import SACConfig
from actorq.lazy_exports import lazy_getattr

# The learner (JAX) loads on first use: actor processes build the builder without it.
_LAZY = dict.fromkeys(
    ("SACLearner", "TrainingState", "actor_loss", "critic_loss", "sample_action",
     "temperature_loss"),
    "actorq.agents.sac.learning",
)
__getattr__ = lazy_getattr(__name__, _LAZY)
__all__ = ["SACBuilder", "SACConfig", *_LAZY]
