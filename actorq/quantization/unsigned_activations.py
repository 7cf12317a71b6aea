"""``uact_int<b>`` and ``fp32head_uact_int<b>``: unsigned activation codes after each ReLU.

A ReLU output is never negative, so the symmetric grid ``+-(2**(b-1) - 1)`` spends half of its
codes on values that never occur. These quantizers give ReLU-fed rows the unsigned grid
``[0, 2**b - 1]`` (twice the resolution at the same bit width); weights and the observation
layer are quantized as in ``int<b>``. ``fp32head_uact_int<b>`` also keeps the output layer in
fp32, where a DQN head's weight rounding moves the small gaps between Q-values that decide the
greedy action.

ONNX Runtime's fast int8 kernel is ``u8 x s8``, so these codes are its native input (see
``actorq.runtime.onnx_runtime`` for CPUs without VNNI, where codes above 127 take the exact
``u8 x u8`` kernel instead).
"""

from __future__ import annotations

from actorq.quantization.builtin import IntQuantizer
from actorq.quantization.float_head import FloatHeadIntQuantizer
from actorq.quantization.registry import register_quantizer

register_quantizer(
    "uact_int",
    lambda bits: IntQuantizer(f"uact_int{bits}", bits, unsigned_activations=True),
    parametric=True,
)
register_quantizer(
    "fp32head_uact_int",
    lambda bits: FloatHeadIntQuantizer(f"fp32head_uact_int{bits}", bits,
                                       unsigned_activations=True),
    parametric=True,
)
