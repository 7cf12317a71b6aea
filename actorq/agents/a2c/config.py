"""A2C hyperparameters. Defaults follow Stable-Baselines3's A2C (the RL Zoo's reference):
5-step unrolls, RMSprop 7e-4 (alpha 0.99, eps 1e-5), n-step returns (GAE lambda 1), value
coefficient 0.5, gradient clip 0.5, no advantage normalization."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import ClassVar

from actorq.agents.on_policy.config import OnPolicyConfig
from actorq.bounds import FRACTION, Bounds


@dataclasses.dataclass(frozen=True)
class A2CConfig(OnPolicyConfig):
    """A2C: one optimizer step on the importance-weighted policy gradient per batch."""

    unroll_length: int = 5
    unrolls_per_batch: int = 8
    learning_rate: float = 7e-4
    gae_lambda: float = 1.0
    entropy_coef: float = 0.0
    normalize_advantages: bool = False
    rmsprop_decay: float = 0.99
    rmsprop_epsilon: float = 1e-5

    BOUNDS: ClassVar[Mapping[str, Bounds]] = {
        **OnPolicyConfig.BOUNDS,
        "rmsprop_decay": FRACTION,
        "rmsprop_epsilon": Bounds(low=0, low_open=True),
    }
