"""PPO hyperparameters. Defaults follow CleanRL's ``ppo.py`` (classic control); the presets in
``configs/ppo_actorq.py`` set the MuJoCo and Box2D ones (``ppo_continuous_action.py``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import ClassVar

from actorq.agents.on_policy.config import OnPolicyConfig
from actorq.bounds import POSITIVE_INT, Bounds


@dataclasses.dataclass(frozen=True)
class PPOConfig(OnPolicyConfig):
    """PPO: ``epochs`` passes of ``minibatches`` minibatches over each batch of unrolls."""

    epochs: int = 4
    minibatches: int = 4
    clip_epsilon: float = 0.2
    clip_value_loss: bool = True
    adam_epsilon: float = 1e-5
    # The ratio divides by the learner's own log-probability and truncated importance weights
    # correct for the (int8) actors' policy. Measured on HalfCheetah with int8 actors (2 seeds,
    # 500k steps): mean of the last 5 evaluations 4330.9 and 4212.0, against 1483.6 with the
    # actor's log-probability and no correction (docs/algorithms.md); CartPole holds 500 either way.
    behavior_logprob: str = "learner"
    is_correction: str = "truncated"

    BOUNDS: ClassVar[Mapping[str, Bounds]] = {
        **OnPolicyConfig.BOUNDS,
        "epochs": POSITIVE_INT,
        "minibatches": POSITIVE_INT,
        "clip_epsilon": Bounds(low=0, high=1, low_open=True),
        "adam_epsilon": Bounds(low=0, low_open=True),
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        steps = self.unroll_length * self.unrolls_per_batch
        if self.minibatches > steps:
            raise ValueError(f"learner.minibatches={self.minibatches} is more than the "
                             f"{steps} steps of a batch (unroll_length x unrolls_per_batch)")
