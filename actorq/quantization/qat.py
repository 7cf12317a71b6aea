"""Quantization-aware training: train the policy through AQT fake quantization.

The forward pass quantizes weights and activations exactly as the ``rtn_int{bits}`` package will
(AQT ``fully_quantized`` with round-to-nearest, not stochastic rounding); the backward pass is the
straight-through estimator (the gradient of round is taken as 1 inside the clip range, AQT's
unquantized backward). A quantization delay trains in fp32 first, as in the QuaRL paper.
"""

from __future__ import annotations

import dataclasses

from aqt.jax.v2 import config as aqt_config

from actorq.networks.mlp import DotGeneral
from actorq.quantization import aqt_compat  # noqa: F401  (before any AQT use)
from actorq.quantization.numerics import check_bits


def fake_quant_dot_general(bits: int) -> DotGeneral:
    """An AQT dot_general that fake-quantizes both operands to ``bits`` bits (STE backward)."""
    check_bits(bits)
    return aqt_config.fully_quantized(
        fwd_bits=bits, bwd_bits=None, use_stochastic_rounding=False
    )


@dataclasses.dataclass(frozen=True)
class QATSchedule:
    """When fake quantization is on: after ``delay_steps`` learner steps of fp32 training.

    Attributes:
      bits: weight/activation bit width (2..8); None disables QAT.
      delay_steps: learner steps before fake quantization switches on.
    """

    bits: int | None = None
    delay_steps: int = 0

    def __post_init__(self) -> None:
        if self.bits is not None:
            check_bits(self.bits)
        if self.delay_steps < 0:
            raise ValueError(f"delay_steps must be >= 0, got {self.delay_steps}")

    def active(self, step: int) -> bool:
        """Whether the learner step ``step`` trains through fake quantization."""
        return self.bits is not None and step >= self.delay_steps
