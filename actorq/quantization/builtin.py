"""Built-in quantizers: fp32 (identity), fp16/bf16 (casts), and ``rtn_int<b>``: round-to-nearest
integers with AQT's numerics, which every integer quantizer builds on (the default ``int<b>``,
``actorq.quantization.recipe``, adds calibration to it)."""

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
from actorq.quantization.package import ConvParams, DenseParams, LayerParams, PolicyPackage
from actorq.quantization.registry import register_quantizer


def package_layer(network: MLP, index: int, kernel: np.ndarray, bias: np.ndarray,
                  kernel_scale: np.ndarray | None = None) -> LayerParams:
    """Layer ``index`` of ``network`` as a package layer: a :class:`ConvParams` (with the
    network's stride) for 4-D kernels, else a :class:`DenseParams`."""
    bias = np.asarray(bias, np.float32)
    if np.ndim(kernel) == 4:
        stride = int(network.conv_layers[index][2])
        return ConvParams(kernel, bias, kernel_scale, strides=(stride, stride))
    return DenseParams(kernel, bias, kernel_scale)


def make_package(spec: str, network: MLP, version: int, layers: list[LayerParams],
             activation_bits: int | None = None,
             unsigned_activations: bool = False) -> PolicyPackage:
    # Conv networks (actorq.networks.conv.ConvNet) read integer-coded pixel observations.
    input_shape = getattr(network, "input_shape", None)
    return PolicyPackage(
        quantizer=spec,
        version=int(version),
        layers=tuple(layers),
        activation=network.activation,
        output_activation=network.output_activation,
        activation_bits=activation_bits,
        unsigned_activations=unsigned_activations,
        input_shape=input_shape,
        input_scale=None if input_shape is None else network.input_scale,
    )


@functools.cache
def _aqt_quantize_kernel(
    bits: int, ndim: int = 2
) -> Callable[[jax.Array], tuple[jax.Array, jax.Array]]:
    """A jitted AQT weight quantizer, per output channel (the last axis; calibration over the
    others: ``[in]`` for dense kernels, ``[kh, kw, in]`` for conv ones); eager AQT costs ~0.1 s
    per call."""
    quantizer = aqt_quantizer.quantizer_make(bits)

    def quantize(kernel: jax.Array) -> tuple[jax.Array, jax.Array]:
        qtensor, _ = quantizer.quant(kernel, calibration_axes=list(range(ndim - 1)))
        return qtensor.qvalue.astype(jnp.int8), qtensor.scale[0].astype(jnp.float32)

    return jax.jit(quantize)


@dataclasses.dataclass(frozen=True)
class FloatQuantizer:
    """Casts kernels to a float dtype (biases stay float32: they are tiny)."""

    spec: str
    dtype: Any

    def quantize(self, params: Any, network: MLP, version: int) -> PolicyPackage:
        layers = [
            package_layer(network, i, np.asarray(kernel, dtype=np.float32).astype(self.dtype),
                          bias)
            for i, (kernel, bias) in enumerate(mlp_layers(params))
        ]
        return make_package(self.spec, network, version, layers)


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
        """AQT-quantizes one ``[in, out]`` (or ``[kh, kw, in, out]``) kernel: (int8 values,
        float32 scale [out])."""
        quantize = _aqt_quantize_kernel(self.bits, np.ndim(kernel))
        values, scale = quantize(jnp.asarray(kernel, jnp.float32))
        return np.asarray(values), np.asarray(scale).reshape(-1)

    def quantize(self, params: Any, network: MLP, version: int) -> PolicyPackage:
        return self.package_layers(mlp_layers(params), network, version)

    def package_layers(self, float_layers: list[tuple[Any, Any]], network: MLP,
                       version: int) -> PolicyPackage:
        """The package of ``network`` with the float ``(kernel, bias)`` pairs ``float_layers``,
        each kernel rounded to nearest."""
        layers = []
        for i, (kernel, bias) in enumerate(float_layers):
            values, scale = self.quantize_kernel(np.asarray(kernel))
            layers.append(package_layer(network, i, values, bias, scale))
        if self.unsigned_activations and network.activation != "relu":
            raise ValueError(
                f"quantizer {self.spec!r} quantizes ReLU outputs as unsigned codes; this "
                f"network's hidden activation is {network.activation!r}"
            )
        return make_package(self.spec, network, version, layers, activation_bits=self.bits,
                        unsigned_activations=self.unsigned_activations)


register_quantizer("fp32", lambda: FloatQuantizer("fp32", np.float32))
register_quantizer("fp16", lambda: FloatQuantizer("fp16", np.float16))
register_quantizer("bf16", lambda: FloatQuantizer("bf16", ml_dtypes.bfloat16))
register_quantizer("rtn_int", lambda bits: IntQuantizer(f"rtn_int{bits}", bits), parametric=True)
