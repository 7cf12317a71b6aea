"""Built-in quantizers: fp32 (identity), fp16/bf16 (casts), int8 and intN (AQT numerics)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from aqt.jax.v2 import aqt_quantizer

from actorq.networks.mlp import MLP, mlp_layers
from actorq.quantization import aqt_compat  # noqa: F401  (before any AQT use)
from actorq.quantization.numerics import check_bits
from actorq.quantization.package import DenseParams, PolicyPackage
from actorq.quantization.registry import register_quantizer


def _package(spec: str, network: MLP, version: int, layers: list[DenseParams],
             activation_bits: int | None = None,
             unsigned_activations: bool = False) -> PolicyPackage:
    return PolicyPackage(
        quantizer=spec,
        version=int(version),
        layers=tuple(layers),
        activation=network.activation,
        output_activation=network.output_activation,
        activation_bits=activation_bits,
        unsigned_activations=unsigned_activations,
    )


@functools.cache
def _aqt_quantize_kernel(bits: int) -> Callable[[jax.Array], tuple[jax.Array, jax.Array]]:
    """A jitted AQT weight quantizer (per output channel); eager AQT costs ~0.1 s per call."""
    quantizer = aqt_quantizer.quantizer_make(bits)

    def quantize(kernel: jax.Array) -> tuple[jax.Array, jax.Array]:
        qtensor, _ = quantizer.quant(kernel, calibration_axes=[0])
        return qtensor.qvalue.astype(jnp.int8), qtensor.scale[0].astype(jnp.float32)

    return jax.jit(quantize)


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
    (``actorq.quantization.numerics``). With bits=8 actors run a real int8 matmul; fewer bits
    travel bit-packed and run on the int8 kernels (PTQ/QAT studies).

    ``unsigned_activations``: rows after a ReLU get unsigned codes (see
    :class:`~actorq.quantization.package.PolicyPackage`); ReLU networks only.
    """

    spec: str
    bits: int = 8
    unsigned_activations: bool = False

    def __post_init__(self) -> None:
        check_bits(self.bits)

    def quantize_kernel(self, kernel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """AQT-quantizes one ``[in, out]`` kernel: (int8 values, float32 scale [out])."""
        values, scale = _aqt_quantize_kernel(self.bits)(jnp.asarray(kernel, jnp.float32))
        return np.asarray(values), np.asarray(scale).reshape(-1)

    def quantize(self, params: Any, network: MLP, version: int) -> PolicyPackage:
        layers = []
        for kernel, bias in mlp_layers(params):
            values, scale = self.quantize_kernel(np.asarray(kernel))
            layers.append(DenseParams(values, np.asarray(bias, np.float32), scale))
        if self.unsigned_activations and network.activation != "relu":
            raise ValueError(
                f"quantizer {self.spec!r} quantizes ReLU outputs as unsigned codes; this "
                f"network's hidden activation is {network.activation!r}"
            )
        return _package(self.spec, network, version, layers, activation_bits=self.bits,
                        unsigned_activations=self.unsigned_activations)


register_quantizer("fp32", lambda: FloatQuantizer("fp32", np.float32))
register_quantizer("fp16", lambda: FloatQuantizer("fp16", np.float16))
register_quantizer("bf16", lambda: FloatQuantizer("bf16", ml_dtypes.bfloat16))
register_quantizer("int", lambda bits: IntQuantizer(f"int{bits}", bits), parametric=True)
