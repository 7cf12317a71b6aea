"""The A2C learner: the on-policy core with the plain policy gradient and RMSprop."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import optax

from actorq.agents.a2c.config import A2CConfig
from actorq.agents.on_policy.learning import Objective, OnPolicyLearner
from actorq.agents.on_policy.networks import OnPolicyNetworks


def make_learner(networks: OnPolicyNetworks, config: A2CConfig,
                     batches: Iterator[dict[str, np.ndarray]], seed: int) -> OnPolicyLearner:
    """A2C: one RMSprop step on the whole batch (no ratio clipping, no epochs)."""
    objective = Objective(clip_epsilon=None, epochs=1, minibatches=1)
    # PyTorch's RMSprop (SB3's) adds eps outside the square root.
    optimizer = optax.rmsprop(config.learning_rate, decay=config.rmsprop_decay,
                              eps=config.rmsprop_epsilon, eps_in_sqrt=False)
    return OnPolicyLearner(networks, config, objective, optimizer, batches, seed)
