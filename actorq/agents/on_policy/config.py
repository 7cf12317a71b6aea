"""Hyperparameters PPO and A2C share (each agent's config adds its own)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import ClassVar

from actorq.bounds import (
    FINITE,
    FRACTION,
    LAYER_SIZES,
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE,
    POSITIVE_INT,
    QAT_BITS,
    Bounds,
    check_bounds,
)
from actorq.networks.sizes import check_torso

# Which log-probability the policy ratio divides by: the actor's (the deployed, possibly int8,
# package that chose the action) or the learner's own fp32 policy before this update.
BEHAVIOUR_LOGPROBS = ("actor", "learner")
# none, or truncated importance sampling on the actor/learner mismatch: each step weighted by
# min(pi_learner / pi_actor, is_cap), as the FP8/INT8-rollout RL systems do.
IS_CORRECTIONS = ("none", "truncated")
ACTIVATIONS = ("tanh", "relu")


@dataclasses.dataclass(frozen=True)
class OnPolicyConfig:
    """Fields shared by the on-policy agents.

    A learner update consumes ``unrolls_per_batch`` unrolls of ``unroll_length`` steps from the
    queue (``unrolls_per_batch * unroll_length`` env steps) and counts as one policy version.
    """

    hidden_sizes: tuple[int, ...] = (64, 64)
    value_hidden_sizes: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    # "mlp" (hidden_sizes), or a conv torso for pixel tasks ("minatar", "nature": their own
    # layer sizes and ReLU, actorq.networks.conv; the value network gets its own copy).
    torso: str = "mlp"
    # Orthogonal init (CleanRL, SB3's default); False: Flax's default (the RL Zoo's tuned MuJoCo
    # presets turn SB3's off).
    orthogonal_init: bool = True
    unroll_length: int = 128
    unrolls_per_batch: int = 4
    learning_rate: float = 2.5e-4
    # Linear decay of the learning rate to 0 over this many updates (0: constant).
    learning_rate_decay_updates: int = 0
    discount: float = 0.99
    gae_lambda: float = 0.95
    value_coef: float = 0.5
    entropy_coef: float = 0.01
    max_gradient_norm: float = 0.5
    normalize_advantages: bool = True
    # PPO's clipped value loss (as in the reference implementations); A2C has no clip.
    clip_value_loss: bool = False
    # The learner keeps running observation statistics and ships them in the package; actors
    # normalize in fp32 before the first layer.
    normalize_observations: bool = False
    # Actors scale rewards by the running std of each environment's discounted return.
    normalize_rewards: bool = False
    initial_log_std: float = 0.0
    # Continuous actions: generalized state-dependent exploration (gSDE; the RL Zoo's use_sde)
    # instead of independent Gaussian noise. The noise is z @ E for the policy's last hidden
    # features z and a matrix E drawn with std exp(log_std) ([features, actions], starting at
    # initial_log_std), held for an unroll per environment.
    gsde: bool = False
    behavior_logprob: str = "actor"
    is_correction: str = "none"
    is_cap: float = 2.0
    qat_bits: int | None = None
    qat_delay_steps: int = 0

    BOUNDS: ClassVar[Mapping[str, Bounds]] = {
        "hidden_sizes": LAYER_SIZES,
        "value_hidden_sizes": LAYER_SIZES,
        "unroll_length": POSITIVE_INT,
        "unrolls_per_batch": POSITIVE_INT,
        "learning_rate": POSITIVE,
        "learning_rate_decay_updates": NON_NEGATIVE_INT,
        "discount": FRACTION,
        "gae_lambda": FRACTION,
        "value_coef": NON_NEGATIVE,
        "entropy_coef": NON_NEGATIVE,
        "max_gradient_norm": POSITIVE,
        "initial_log_std": FINITE,
        "is_cap": Bounds(low=1),
        "qat_bits": QAT_BITS,
        "qat_delay_steps": NON_NEGATIVE_INT,
    }

    def __post_init__(self) -> None:
        check_bounds(self, self.BOUNDS, prefix="learner.")
        check_torso(self.torso)
        if self.gsde and self.torso != "mlp":
            raise ValueError("learner.gsde needs the mlp torso (its noise reads the last hidden "
                             "features of an MLP policy)")
        for field, valid in (("activation", ACTIVATIONS),
                             ("behavior_logprob", BEHAVIOUR_LOGPROBS),
                             ("is_correction", IS_CORRECTIONS)):
            if getattr(self, field) not in valid:
                raise ValueError(f"learner.{field}={getattr(self, field)!r}; valid: "
                                 f"{', '.join(valid)}")

    def gsde_features(self, observation_size: int) -> int:
        """The features a gSDE policy's noise reads: its output layer's inputs, the last hidden
        layer (or the observation, with no hidden layer)."""
        return int(self.hidden_sizes[-1]) if self.hidden_sizes else int(observation_size)

    # What the framework asks of every learner config.
    @property
    def batch_size(self) -> int:
        return self.unrolls_per_batch

    @property
    def sgd_steps_per_call(self) -> int:
        return 1
