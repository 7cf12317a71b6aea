"""DDPG hyperparameters; defaults are CleanRL's ``ddpg_continuous_action.py``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import ClassVar

from actorq.bounds import (
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

EXPLORATIONS = ("gaussian", "ou")


@dataclasses.dataclass(frozen=True)
class DDPGConfig:
    """Everything the DDPG learner and actors need; launch settings live in the experiment
    config."""

    policy_hidden_sizes: tuple[int, ...] = (256, 256)
    critic_hidden_sizes: tuple[int, ...] = (256, 256)
    policy_learning_rate: float = 3e-4
    critic_learning_rate: float = 3e-4
    batch_size: int = 256
    n_step: int = 1
    discount: float = 0.99
    # Polyak averaging of both target networks at every policy step.
    tau: float = 0.005
    # The policy (and the targets) update every policy_frequency critic steps (TD3's delay,
    # which CleanRL's DDPG keeps at 2).
    policy_frequency: int = 2
    # Weight of mean(pre-tanh activation ** 2) added to the policy loss. Without it a policy can
    # push its pre-activations so far that tanh is exactly 1.0 in fp32, its gradient exactly 0,
    # and no later critic can move it back (docs/algorithms.md, DDPG MountainCarContinuous).
    preactivation_penalty: float = 0.0
    # SGD steps per jitted call (a multiple of policy_frequency): 4 pays the dispatch and the
    # metrics' device_get once per 4 steps (docs/performance.md).
    sgd_steps_per_call: int = 4
    # Exploration: gaussian N(0, sigma) or Ornstein-Uhlenbeck noise on the tanh action, clipped
    # to [-1, 1] (OU as SB3 steps it: x += theta * -x * dt + sigma * sqrt(dt) * N(0, 1)); the
    # first uniform_random_steps of each actor are uniform.
    exploration: str = "gaussian"
    sigma: float = 0.1
    ou_theta: float = 0.15
    ou_dt: float = 1e-2
    uniform_random_steps: int = 25_000
    # Training rewards below this floor are raised to it before they enter replay (None: off).
    # BipedalWalker's -100 for a fall dwarfs its per-step rewards (|r| < 1); DI-engine's DDPG
    # and TD3 configs floor it at -10. Evaluation returns stay the environment's own.
    reward_floor: float | None = None
    # LayerNorm after every hidden layer of the critic (OpenAI Baselines' DDPG normalizes its
    # critic's layers); the policy is unchanged.
    critic_layer_norm: bool = False
    # Linear decay of both learning rates to 0 over this many critic SGD steps (the policy's over
    # its own steps, a policy_frequency-th as many); 0: constant. Late updates shrink, so a policy
    # that has learned to walk is not pushed back out of it by the last updates of the budget.
    learning_rate_decay_steps: int = 0
    qat_bits: int | None = None
    qat_delay_steps: int = 0

    BOUNDS: ClassVar[Mapping[str, Bounds]] = {
        "policy_hidden_sizes": LAYER_SIZES,
        "critic_hidden_sizes": LAYER_SIZES,
        "policy_learning_rate": POSITIVE,
        "critic_learning_rate": POSITIVE,
        "batch_size": POSITIVE_INT,
        "n_step": POSITIVE_INT,
        "discount": FRACTION,
        "tau": Bounds(low=0, high=1, low_open=True),
        "policy_frequency": POSITIVE_INT,
        "preactivation_penalty": NON_NEGATIVE,
        "sgd_steps_per_call": POSITIVE_INT,
        "sigma": NON_NEGATIVE,
        "ou_theta": FRACTION,
        "ou_dt": POSITIVE,
        "uniform_random_steps": NON_NEGATIVE_INT,
        "reward_floor": Bounds(optional=True),
        "learning_rate_decay_steps": NON_NEGATIVE_INT,
        "qat_bits": QAT_BITS,
        "qat_delay_steps": NON_NEGATIVE_INT,
    }

    def __post_init__(self) -> None:
        check_bounds(self, self.BOUNDS, prefix="learner.")
        if self.sgd_steps_per_call % self.policy_frequency:
            raise ValueError(f"learner.sgd_steps_per_call={self.sgd_steps_per_call} must be a "
                             f"multiple of learner.policy_frequency={self.policy_frequency}")
        if self.exploration not in EXPLORATIONS:
            raise ValueError(f"learner.exploration={self.exploration!r}; valid: "
                             f"{', '.join(EXPLORATIONS)}")
