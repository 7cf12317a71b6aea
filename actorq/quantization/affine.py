"""``affine_int<b>``: the QuaRL paper's quantizer, uniform affine quantization (Krishnamoorthi,
2018), simulated in float.

The paper quantizes with "standard uniform affine quantization": asymmetric grids with a zero
point, one per tensor for dense layers and one per output channel for convolutions, weights and
activations at the same precision. This quantizer reproduces those numerics for the Table 2 study
beside actorq's own ``int<b>`` recipe:

- each kernel is rounded to the b-bit grid over ``[min(W, 0), max(W, 0)]`` (per tensor; per output
  channel for conv kernels) and stored dequantized, as float32;
- each layer's input is rounded to the b-bit grid of its range before the matmul. The range is
  static, the min and max of that input over calibration observations through the float network
  (:meth:`AffineQuantizer.with_calibration`; what TensorFlow's post-training quantization
  records), or, without calibration, each sample's own range.

Simulated means: the runtimes run these packages as float layers with the rounding in between
(exactly what the reference defines), so they measure the paper's numerics, not its speed, and
the package is as large as fp32's. actorq's fast integer path is ``int<b>``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np

from actorq.networks.mlp import ACTIVATIONS, MLP, mlp_layers
from actorq.quantization.base import checked_calibration
from actorq.quantization.builtin import make_package, package_layer
from actorq.quantization.numerics import affine_fake_quant, check_bits
from actorq.quantization.package import PolicyPackage
from actorq.quantization.reference import float_layer, package_arrays, package_geometry
from actorq.quantization.registry import register_quantizer


def affine_kernel(kernel: np.ndarray, bits: int) -> np.ndarray:
    """``kernel`` on the ``bits``-bit affine grid: one grid per tensor for ``[in, out]`` kernels,
    one per output channel (the last axis) for ``[kh, kw, in, out]`` conv kernels."""
    kernel = np.asarray(kernel, np.float32)
    axes = tuple(range(kernel.ndim - 1)) if kernel.ndim == 4 else None
    lo = np.min(kernel, axis=axes, keepdims=axes is not None)
    hi = np.max(kernel, axis=axes, keepdims=axes is not None)
    return affine_fake_quant(kernel, lo, hi, bits)


def layer_input_ranges(package: PolicyPackage, observations: np.ndarray) -> list[np.ndarray]:
    """``[lo, hi]`` (float32) of each layer's input over ``observations``, through the float
    network of ``package`` (its kernels as they are)."""
    arrays = package_arrays(package)
    geometry = package_geometry(package)
    if package.pixels:  # frames arrive as codes, uint8 or (from a learner's batch) float32
        x = jnp.asarray(np.asarray(observations, np.float32) * np.float32(package.input_scale))
    else:
        x = jnp.asarray(package.prepare(observations))
    ranges = []
    for i, layer in enumerate(arrays):
        if geometry[i] is None and x.ndim > 2:
            x = x.reshape(x.shape[0], -1)
        ranges.append(np.array([jnp.min(x), jnp.max(x)], np.float32))
        x = float_layer(x, layer, geometry[i])
        if i < len(arrays) - 1:
            x = ACTIVATIONS[package.activation](x)
    return ranges


@dataclasses.dataclass(frozen=True)
class AffineQuantizer:
    """The paper's uniform affine ``bits``-bit quantizer (see the module docstring).

    ``calibration``: observations whose layer inputs set the static activation ranges; None
    gives each sample its own range.
    """

    spec: str
    bits: int = 8
    calibration: np.ndarray | None = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_bits(self.bits)

    def with_calibration(self, observations: np.ndarray) -> AffineQuantizer:
        """This quantizer with static activation ranges from ``observations`` (raw or
        normalized as the package's first layer reads them; pixel batches as uint8 codes)."""
        observations = checked_calibration(observations)
        return dataclasses.replace(self, calibration=observations)

    def quantize(self, params: Any, network: MLP, version: int) -> PolicyPackage:
        layers = [package_layer(network, i, affine_kernel(kernel, self.bits), bias)
                  for i, (kernel, bias) in enumerate(mlp_layers(params))]
        package = make_package(self.spec, network, version, layers)
        ranges = [None] * len(layers)
        if self.calibration is not None:
            ranges = layer_input_ranges(package, self.calibration)
        return dataclasses.replace(
            package, affine_bits=self.bits,
            layers=tuple(dataclasses.replace(layer, input_range=r)
                         for layer, r in zip(package.layers, ranges)))


register_quantizer(
    "affine_int", lambda bits: AffineQuantizer(f"affine_int{bits}", bits), parametric=True
)
