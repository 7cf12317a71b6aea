"""The PPO learner: the on-policy core with the clipped objective and Adam."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import optax

from actorq.agents.on_policy.learning import Objective, OnPolicyLearner
from actorq.agents.on_policy.networks import OnPolicyNetworks
from actorq.agents.ppo.config import PPOConfig


def make_learner(networks: OnPolicyNetworks, config: PPOConfig,
                     batches: Iterator[dict[str, np.ndarray]], seed: int) -> OnPolicyLearner:
    """PPO: clipped surrogate over ``epochs`` x ``minibatches`` Adam steps per batch."""
    objective = Objective(clip_epsilon=config.clip_epsilon, epochs=config.epochs,
                          minibatches=config.minibatches)
    optimizer = optax.adam(config.learning_rate, eps=config.adam_epsilon)
    return OnPolicyLearner(networks, config, objective, optimizer, batches, seed)
