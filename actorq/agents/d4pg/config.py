"""D4PG hyperparameters (QuaRL paper defaults)."""

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
from actorq.lowp.fixes import OPTIMIZER_FIXES, check_learner_precision, fixes_in_effect
from actorq.networks.sizes import PAPER_CRITIC_SIZES, PAPER_POLICY_SIZES

# Of Björck et al.'s six fixes, those that act on D4PG's update (its policy is deterministic and
# its target networks are periodic copies, not Polyak averages).
D4PG_FIXES = OPTIMIZER_FIXES


@dataclasses.dataclass(frozen=True)
class D4PGConfig:
    """Everything the D4PG learner and actors need; launch settings live in the experiment config.

    Defaults are the paper's: policy 3 x 2048, critic (512, 512, 256) with 51 atoms in
    [-150, 150], n-step 5, discount 0.99, Adam 1e-4 for both, batch 256, target period 100.
    """

    policy_hidden_sizes: tuple[int, ...] = PAPER_POLICY_SIZES
    critic_hidden_sizes: tuple[int, ...] = PAPER_CRITIC_SIZES
    num_atoms: int = 51
    v_min: float = -150.0
    v_max: float = 150.0
    n_step: int = 5
    discount: float = 0.99
    policy_learning_rate: float = 1e-4
    critic_learning_rate: float = 1e-4
    batch_size: int = 256
    target_update_period: int = 100
    sgd_steps_per_call: int = 1
    # Gaussian exploration: actor i of N gets sigma_max * (i + 1) / N (spread over (0, sigma_max]).
    sigma_max: float = 0.2
    # DPG gradient clipping (Acme's dqda_clipping); None disables.
    dqda_clipping: float | None = None
    # Quantization-aware training of the policy: bits (None = off) and fp32 steps before it.
    qat_bits: int | None = None
    qat_delay_steps: int = 0
    # The learner's arithmetic: fp32, or pure fp16/bf16 (parameters, activations, gradients and
    # optimizer state in that dtype, as in Björck et al.) with the fixes in lowp_fixes ("all",
    # "none" or names; only D4PG_FIXES apply); the optimizer is then their Adam.
    precision: str = "fp32"
    lowp_fixes: str = "all"
    loss_scale_init: float = 1e4
    loss_scale_increase_every: int = 10_000

    # What each numeric field admits (actorq.bounds; checked first in __post_init__).
    BOUNDS: ClassVar[Mapping[str, Bounds]] = {
        "policy_hidden_sizes": LAYER_SIZES,
        "critic_hidden_sizes": LAYER_SIZES,
        "num_atoms": Bounds(low=2, integer=True),
        "v_min": FINITE,
        "v_max": FINITE,
        "n_step": POSITIVE_INT,
        "discount": FRACTION,
        "policy_learning_rate": POSITIVE,
        "critic_learning_rate": POSITIVE,
        "batch_size": POSITIVE_INT,
        "target_update_period": POSITIVE_INT,
        "sgd_steps_per_call": POSITIVE_INT,
        "sigma_max": NON_NEGATIVE,
        "dqda_clipping": Bounds(low=0, low_open=True, optional=True),
        "qat_bits": QAT_BITS,
        "qat_delay_steps": NON_NEGATIVE_INT,
        "loss_scale_init": POSITIVE,
        "loss_scale_increase_every": POSITIVE_INT,
    }

    def __post_init__(self) -> None:
        check_bounds(self, self.BOUNDS, prefix="learner.")
        check_learner_precision(self.precision, self.lowp_fixes, self.loss_scale_init,
                                self.loss_scale_increase_every)
        if self.num_atoms < 2 or self.v_max <= self.v_min:
            raise ValueError("need num_atoms >= 2 and v_max > v_min")

    @property
    def fix_names(self) -> tuple[str, ...]:
        """The fixes in effect: those of ``lowp_fixes`` that apply to D4PG, none in fp32."""
        return fixes_in_effect(self.precision, self.lowp_fixes, D4PG_FIXES)
