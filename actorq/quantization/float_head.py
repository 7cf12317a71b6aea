"""``fp32head_int<b>``: b-bit integer layers everywhere except the last, which stays fp32.

A greedy DQN actor takes the argmax of the output layer. When Q-values are large next to the
gaps between them, the rounding error of an integer output layer decides which action wins.
That layer is the network's smallest (hidden x actions: 64 x 2 for DQN cart-pole, 2048 x 6 for
the paper policy, under 0.2% of its weights), so keeping it fp32 costs the package and the
actor almost nothing. Every runtime runs mixed packages (float layers are fp32 matmuls).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from actorq.networks.mlp import MLP, mlp_layers
from actorq.quantization.builtin import IntQuantizer
from actorq.quantization.package import PolicyPackage
from actorq.quantization.registry import register_quantizer


def with_float_output_layer(package: PolicyPackage, kernel: Any, bias: Any) -> PolicyPackage:
    """``package`` with its last layer replaced by the fp32 ``kernel`` and ``bias``."""
    head = dataclasses.replace(package.layers[-1], kernel=np.asarray(kernel, np.float32),
                               bias=np.asarray(bias, np.float32), kernel_scale=None)
    return dataclasses.replace(package, layers=(*package.layers[:-1], head))


@dataclasses.dataclass(frozen=True)
class FloatHeadIntQuantizer(IntQuantizer):
    """:class:`IntQuantizer` with the last (output) layer kept in fp32."""

    def quantize(self, params: Any, network: MLP, version: int) -> PolicyPackage:
        package = super().quantize(params, network, version)
        return with_float_output_layer(package, *mlp_layers(params)[-1])


register_quantizer(
    "fp32head_int", lambda bits: FloatHeadIntQuantizer(f"fp32head_int{bits}", bits),
    parametric=True,
)
