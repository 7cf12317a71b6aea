"""Built-in quantizers: fp32 (identity), fp16/bf16 (casts), int8 and intN (AQT numerics)."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import ml_dtypes
import numpy as np
from aqt.jax.v2 import aqt_quantizer

from actorq.networks.mlp import MLP, mlp_layers
from actorq.quantization.numerics import check_bits
from actorq.quantization.package import DenseParams, PolicyPackage
from actorq.quantization.registry import register_quantizer


def _package(spec: str, network: MLP, version: int, layers: list[DenseParams],
             activation_bits: int | None = None) -> PolicyPackage:
    return PolicyPackage(
        quantizer=spec,
        version=int(version),
        layers=tuple(layers),
        activation=network.activation,
        output_activation=network.output_activation,
        activation_bits=activation_bits,
    )


@dataclasses.dataclass(frozen=True)
class FloatQuantizer:
    """Casts kernels to a float dtype (biases stay float32: they are tiny)."""

    spec: str
    dtype: Any

    def quantize(self, params: Any, network: MLP, version: int) -> PolicyPackage:
        layers = [
            DenseParams(
                kernel=np.asarray(kernel, dtype=np.float32).astype(self.dtype),
                bias=np.asarray(bias, dtype=np.float32),
            )
            for kernel, bias in mlp_layers(params)
        ]
        return _package(self.spec, network, version, layers)


@dataclasses.dataclass(frozen=True)
class IntQuantizer:
    """Symmetric per-output-channel ``bits``-bit weights, dynamic per-row activations.

    Weights are quantized by AQT's own quantizer (abs-max calibration over the contraction axis),
    so the package holds exactly the integers AQT's ``fully_quantized(fwd_bits=bits)`` dot_general
    uses; activations are quantized at inference with the same numerics
    (``actorq.quantization.numerics``). With bits=8 actors run a real int8 matmul; fewer bits are
    stored in the same int8 container for PTQ/QAT studies.
    """

    spec: str
    bits: int = 8

    def __post_init__(self) -> None:
        check_bits(self.bits)

    def quantize_kernel(self, kernel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """AQT-quantizes one ``[in, out]`` kernel: (int8 values, float32 scale [out])."""
        quantizer = aqt_quantizer.quantizer_make(self.bits)
        qtensor, _ = quantizer.quant(jnp.asarray(kernel, jnp.float32), calibration_axes=[0])
        values = np.asarray(qtensor.qvalue).astype(np.int8)
        scale = np.asarray(qtensor.scale[0], dtype=np.float32).reshape(-1)
        return values, scale

    def quantize(self, params: Any, network: MLP, version: int) -> PolicyPackage:
        layers = []
        for kernel, bias in mlp_layers(params):
            values, scale = self.quantize_kernel(np.asarray(kernel))
            layers.append(DenseParams(values, np.asarray(bias, np.float32), scale))
        return _package(self.spec, network, version, layers, activation_bits=self.bits)


register_quantizer("fp32", lambda: FloatQuantizer("fp32", np.float32))
register_quantizer("fp16", lambda: FloatQuantizer("fp16", np.float16))
register_quantizer("bf16", lambda: FloatQuantizer("bf16", ml_dtypes.bfloat16))
register_quantizer("int", lambda bits: IntQuantizer(f"int{bits}", bits), parametric=True)
