"""SAC hyperparameters, including the learner's precision and Björck et al.'s six fixes.

Importable without JAX (actor processes build the config): the fix names come from
:mod:`actorq.lowp.fixes`, which does not import JAX either.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import ClassVar

from actorq.bounds import (
    FINITE,
    FRACTION,
    LAYER_SIZES,
    NON_NEGATIVE_INT,
    POSITIVE,
    POSITIVE_INT,
    QAT_BITS,
    Bounds,
    check_bounds,
)
from actorq.lowp.fixes import FIX_NAMES, PRECISIONS, LowpFixes

__all__ = ["FIX_NAMES", "PRECISIONS", "SACConfig", "parse_fixes"]

_FP16_MAX = 65504.0
# exp(-log_std) overflows fp16 below this (actorq.lowp.gaussian_log_prob's docstring).
_FP16_MIN_LOG_STD = -11.0


def parse_fixes(names: str | Iterable[str]) -> tuple[str, ...]:
    """The fix names turned on by ``names`` (``LowpFixes.from_names`` syntax), in canonical
    order."""
    return LowpFixes.from_names(names).names()


@dataclasses.dataclass(frozen=True)
class SACConfig:
    """Everything the SAC learner and actors need; launch settings live in the experiment config.

    Defaults follow Haarnoja et al. (2018b) as sized for a CPU: two 256-unit layers for the
    policy and each of the twin critics, Adam 3e-4, batch 256, discount 0.99, Polyak tau 0.005,
    target entropy ``-action_dim``, one SGD step per call.

    ``precision`` is the learner's arithmetic: ``fp32``, or pure ``fp16``/``bf16`` as in Björck
    et al. (2021): parameters, activations, gradients and optimizer state all in that dtype, no
    fp32 master weights. ``lowp_fixes`` picks which of their six fixes are on (see
    :func:`parse_fixes`); it only applies when ``precision != "fp32"``: the fp32 learner is
    textbook SAC (plain Adam, plain Polyak, the stable tanh/Gaussian log-densities every fp32
    SAC uses).

    ``master_weights=True`` is supervised learning's mixed precision instead (Micikevicius et
    al., 2018): parameters, targets and optimizer state stay fp32, the networks' forward and
    backward passes run in ``precision`` while the losses, their reductions and the
    log-probabilities run in fp32 (as autocast does), and the fp32 update comes from gradients
    of the loss times a dynamic loss scale (with ``lowp_fixes="loss_scaling"``: halved and the
    step skipped on overflow, doubled after ``loss_scale_increase_every`` clean steps). Björck
    et al. report that such adaptations fail for SAC; this is the baseline to check it.
    """

    policy_hidden_sizes: tuple[int, ...] = (256, 256)
    critic_hidden_sizes: tuple[int, ...] = (256, 256)
    policy_learning_rate: float = 3e-4
    critic_learning_rate: float = 3e-4
    alpha_learning_rate: float = 3e-4
    batch_size: int = 256
    n_step: int = 1
    discount: float = 0.99
    tau: float = 0.005
    initial_temperature: float = 0.1
    # None: -action_dim (Haarnoja et al.'s heuristic).
    target_entropy: float | None = None
    # The policy's log-std is clipped to [log_std_min, log_std_max] by the learner and actors.
    log_std_min: float = -5.0
    log_std_max: float = 2.0
    sgd_steps_per_call: int = 1
    precision: str = "fp32"
    lowp_fixes: str = "all"
    master_weights: bool = False
    # Compound loss scaling (Björck et al.'s defaults): initial scale and clean steps per doubling.
    loss_scale_init: float = 1e4
    loss_scale_increase_every: int = 10_000
    # Quantization-aware training of the policy: bits (None = off) and learner steps before it.
    qat_bits: int | None = None
    qat_delay_steps: int = 0

    # What each numeric field admits (actorq.bounds; checked first in __post_init__).
    BOUNDS: ClassVar[Mapping[str, Bounds]] = {
        "policy_hidden_sizes": LAYER_SIZES,
        "critic_hidden_sizes": LAYER_SIZES,
        "policy_learning_rate": POSITIVE,
        "critic_learning_rate": POSITIVE,
        "alpha_learning_rate": POSITIVE,
        "batch_size": POSITIVE_INT,
        "n_step": POSITIVE_INT,
        "discount": FRACTION,
        "tau": Bounds(low=0, high=1, low_open=True),
        "initial_temperature": POSITIVE,
        "target_entropy": Bounds(optional=True),
        "log_std_min": FINITE,
        "log_std_max": FINITE,
        "sgd_steps_per_call": POSITIVE_INT,
        "loss_scale_init": POSITIVE,
        "loss_scale_increase_every": POSITIVE_INT,
        "qat_bits": QAT_BITS,
        "qat_delay_steps": NON_NEGATIVE_INT,
    }

    def __post_init__(self) -> None:
        check_bounds(self, self.BOUNDS, prefix="learner.")
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"unknown precision {self.precision!r}; valid: {', '.join(PRECISIONS)}"
            )
        fixes = parse_fixes(self.lowp_fixes)
        if self.master_weights and self.precision == "fp32":
            raise ValueError("learner.master_weights=True needs a low compute precision "
                             "(learner.precision=fp16 or bf16), got fp32")
        if not self.log_std_min < self.log_std_max:
            raise ValueError(
                f"need log_std_min < log_std_max, got [{self.log_std_min}, {self.log_std_max}]"
            )
        if self.precision == "fp16":
            # With master weights the scale is stored in fp32 (the scaled loss is fp32 too).
            if ("loss_scaling" in fixes and not self.master_weights
                    and self.loss_scale_init > _FP16_MAX):
                raise ValueError(
                    f"loss_scale_init {self.loss_scale_init} is above fp16's max {_FP16_MAX}"
                )
            if "normal_fix" in fixes and self.log_std_min < _FP16_MIN_LOG_STD:
                raise ValueError(
                    f"log_std_min {self.log_std_min} is below {_FP16_MIN_LOG_STD}: exp(-log_std) "
                    "overflows fp16 there even with the normal-fix; raise the bound"
                )

    @property
    def fix_names(self) -> tuple[str, ...]:
        """The fixes in effect: those of ``lowp_fixes`` in low precision, none in fp32."""
        return () if self.precision == "fp32" else parse_fixes(self.lowp_fixes)
