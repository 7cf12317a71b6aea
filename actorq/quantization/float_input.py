"""``fp32in_int<b>``: b-bit integer layers everywhere except the first, which stays fp32.

The first layer reads the raw observation. Per-row activation quantization gives a whole row
one scale, set by its largest feature. When features differ in scale (cart-pole: positions and
velocities of ~1-3 next to a pole angle of ~0.05), the small ones lose most of their resolution
before the network sees them. Keeping that one layer in fp32 avoids this. Its kernel is tiny
(obs x hidden: 4 x 64 for DQN cart-pole, 24 x 2048 for the paper policy, 0.6% of its weights),
so the package and the actor's integer matmuls barely change. Every runtime runs mixed packages:
float layers are fp32 matmuls and the rest are unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from actorq.networks.mlp import MLP, mlp_layers
from actorq.quantization.builtin import IntQuantizer
from actorq.quantization.package import PolicyPackage
from actorq.quantization.registry import register_quantizer


@dataclasses.dataclass(frozen=True)
class FloatInputIntQuantizer(IntQuantizer):
    """:class:`IntQuantizer` with the first (observation) layer kept in fp32."""

    def quantize(self, params: Any, network: MLP, version: int) -> PolicyPackage:
        package = super().quantize(params, network, version)
        kernel, bias = mlp_layers(params)[0]
        first = dataclasses.replace(package.layers[0], kernel=np.asarray(kernel, np.float32),
                                    bias=np.asarray(bias, np.float32), kernel_scale=None)
        return dataclasses.replace(package, layers=(first, *package.layers[1:]))


register_quantizer(
    "fp32in_int", lambda bits: FloatInputIntQuantizer(f"fp32in_int{bits}", bits), parametric=True
)
