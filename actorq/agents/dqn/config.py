"""DQN hyperparameters (double Q-learning, Huber loss, n-step, optional prioritized replay)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from actorq.bounds import (
    FRACTION,
    LAYER_SIZES,
    NON_NEGATIVE_INT,
    POSITIVE,
    POSITIVE_INT,
    QAT_BITS,
    Bounds,
    check_bounds,
)
from actorq.lowp.fixes import OPTIMIZER_FIXES, check_learner_precision, fixes_in_effect
from actorq.networks.sizes import PAPER_POLICY_SIZES, check_torso

if TYPE_CHECKING:
    import optax

# Of Björck et al.'s six fixes, those that act on DQN's update (it has no Gaussian policy, and
# its target network is a periodic copy, not a Polyak average).
DQN_FIXES = OPTIMIZER_FIXES


@dataclasses.dataclass(frozen=True)
class DQNConfig:
    """Defaults follow the QuaRL paper's Gym setup (3 x 2048 Q-network, Adam 1e-4, batch 256)."""

    hidden_sizes: tuple[int, ...] = PAPER_POLICY_SIZES
    # "mlp" (hidden_sizes), or a conv torso for pixel tasks ("minatar", "nature": their own
    # layer sizes, actorq.networks.conv).
    torso: str = "mlp"
    n_step: int = 1
    discount: float = 0.99
    learning_rate: float = 1e-4
    # Linear decay of the learning rate to learning_rate_final over learning_rate_decay_steps SGD
    # steps (0: constant). A late policy that keeps taking full-size steps can unlearn a solved
    # task (DQN on CartPole falls from 500 and climbs back); fp32 learner only.
    learning_rate_final: float | None = None
    learning_rate_decay_steps: int = 0
    batch_size: int = 256
    target_update_period: int = 100
    # > 0: a Polyak-averaged target network (target += tau * (online - target) every SGD step)
    # instead of the periodic copy every target_update_period steps.
    target_update_tau: float = 0.0
    sgd_steps_per_call: int = 1
    huber_delta: float = 1.0
    # Double Q-learning targets (van Hasselt et al.); False: the target network's max, as in
    # SB3's DQN (its overestimation is what explores MountainCar: configs/dqn_actorq.py).
    double_q: bool = True
    max_gradient_norm: float = 10.0
    adam_epsilon: float = 1e-8
    # Epsilon-greedy: linear decay from epsilon_start to the actor's final epsilon over
    # epsilon_decay_steps actor steps; actor i of N ends at a value spread over
    # [epsilon_min, epsilon_max] (one actor: epsilon_min).
    epsilon_start: float = 1.0
    epsilon_min: float = 0.01
    epsilon_max: float = 0.1
    epsilon_decay_steps: int = 10_000
    prioritized: bool = False
    importance_beta: float = 0.4
    priority_epsilon: float = 1e-3
    qat_bits: int | None = None
    qat_delay_steps: int = 0
    # The learner's arithmetic: fp32, or pure fp16/bf16 (parameters, activations, gradients and
    # optimizer state all in that dtype, as in Björck et al.) with the fixes in lowp_fixes
    # ("all", "none" or names; only DQN_FIXES apply). In fp16/bf16 the optimizer is their Adam,
    # and the global-norm clip is off: compound loss scaling never unscales the gradients.
    precision: str = "fp32"
    lowp_fixes: str = "all"
    loss_scale_init: float = 1e4
    loss_scale_increase_every: int = 10_000

    # What each numeric field admits (actorq.bounds; checked first in __post_init__).
    BOUNDS: ClassVar[Mapping[str, Bounds]] = {
        "hidden_sizes": LAYER_SIZES,
        "n_step": POSITIVE_INT,
        "discount": FRACTION,
        "learning_rate": POSITIVE,
        "learning_rate_final": Bounds(low=0, low_open=True, optional=True),
        "learning_rate_decay_steps": NON_NEGATIVE_INT,
        "batch_size": POSITIVE_INT,
        "target_update_period": POSITIVE_INT,
        "target_update_tau": FRACTION,
        "sgd_steps_per_call": POSITIVE_INT,
        "huber_delta": POSITIVE,
        "max_gradient_norm": POSITIVE,
        "adam_epsilon": POSITIVE,
        "epsilon_start": FRACTION,
        "epsilon_min": FRACTION,
        "epsilon_max": FRACTION,
        "epsilon_decay_steps": NON_NEGATIVE_INT,  # 0: the final epsilon from the first step
        "importance_beta": FRACTION,
        "priority_epsilon": POSITIVE,
        "qat_bits": QAT_BITS,
        "qat_delay_steps": NON_NEGATIVE_INT,
        "loss_scale_init": POSITIVE,
        "loss_scale_increase_every": POSITIVE_INT,
    }

    def __post_init__(self) -> None:
        check_bounds(self, self.BOUNDS, prefix="learner.")
        check_torso(self.torso)
        check_learner_precision(self.precision, self.lowp_fixes, self.loss_scale_init,
                                self.loss_scale_increase_every)
        if not 0 <= self.epsilon_min <= self.epsilon_max <= 1:
            raise ValueError("need 0 <= epsilon_min <= epsilon_max <= 1")
        if self.learning_rate_decay_steps and self.learning_rate_final is None:
            raise ValueError("learning_rate_decay_steps needs learning_rate_final")
        if self.learning_rate_decay_steps and self.precision != "fp32":
            raise ValueError("a decaying learning rate is only supported by the fp32 learner; "
                             f"got precision {self.precision!r}")

    @property
    def learning_rate_schedule(self) -> float | optax.Schedule:
        """The learning rate: constant, or the linear decay configured above."""
        if not self.learning_rate_decay_steps:
            return self.learning_rate
        # Imported here: actor processes read this config and must not import JAX (optax does).
        import optax
        return optax.linear_schedule(self.learning_rate, self.learning_rate_final,
                                     self.learning_rate_decay_steps)

    @property
    def fix_names(self) -> tuple[str, ...]:
        """The fixes in effect: those of ``lowp_fixes`` that apply to DQN, none in fp32."""
        return fixes_in_effect(self.precision, self.lowp_fixes, DQN_FIXES)
