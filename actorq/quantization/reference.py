"""The reference forward pass of a policy package, in JAX.

This defines what every actor runtime must compute. Integer packages run a real
int8 x int8 -> int32 matmul (``preferred_element_type=int32`` on s8 operands), with dynamic per-row
activation quantization, then rescale by ``activation_scale * kernel_scale`` and add the bias.
Float packages compute in the kernel's dtype with float32 accumulation.

Conv layers are VALID NHWC convolutions with the same numerics: one dynamic activation scale per
sample (over its whole ``[H, W, C]`` map), per-output-channel kernel scales. A pixel package's
uint8 codes enter its first integer layer exactly, with the fixed scale ``input_scale``.

Static codes (``input_code_scale``, package format 7): an integer convolution whose next layer
has a code scale does not rescale to float. It adds its int32 bias codes to the accumulator and
requantizes to that layer's unsigned 8-bit codes (``numerics.requantize_codes``: ONNX's
QLinearConv), with the constants of ``PolicyPackage.requantize_constants``; the clip at 0 is its
ReLU. The next layer takes those codes as it takes pixel codes.

Unsigned activation codes (``PolicyPackage.unsigned_activations``, and pixel codes) reach
``[0, 255]``, which s8 cannot hold. They go to the same s8 matmul shifted by -128, and
``128 * column_sum(kernel)`` is added back to the int32 accumulator: the same integers, on XLA's
fast int8 path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from actorq.networks.mlp import ACTIVATIONS
from actorq.quantization.numerics import (
    affine_fake_quant,
    affine_range,
    quantize_rows,
    quantize_rows_unsigned,
    requantize_codes,
)
from actorq.quantization.package import ConvParams, PolicyPackage

PackageArrays = list[dict[str, jax.Array]]
# Per layer: the conv strides, or None for a dense layer (static: it shapes the computation).
Geometry = tuple[tuple[int, int] | None, ...]
CONV_DIMENSIONS = ("NHWC", "HWIO", "NHWC")


def package_arrays(package: PolicyPackage) -> PackageArrays:
    """The package's arrays as a pytree (a jit argument, so new versions do not recompile).

    A layer that requantizes to static codes carries ``bias_codes`` and ``multiplier``
    (computed once, in NumPy, as every runtime does) and its next layer ``code_scale``."""
    arrays = []
    code_scales = package.code_scales()
    for i, layer in enumerate(package.layers):
        entry = {"kernel": jnp.asarray(layer.kernel), "bias": jnp.asarray(layer.bias)}
        if layer.kernel_scale is not None:
            entry["kernel_scale"] = jnp.asarray(layer.kernel_scale)
        if layer.input_range is not None:
            entry["input_range"] = jnp.asarray(layer.input_range)
        if layer.input_code_scale is not None:
            entry["code_scale"] = jnp.float32(code_scales[i])
        constants = package.requantize_constants(i)
        if constants is not None:
            entry["bias_codes"], entry["multiplier"] = map(jnp.asarray, constants)
        arrays.append(entry)
    return arrays


def package_geometry(package: PolicyPackage) -> Geometry:
    """Each layer's conv strides, or None for dense layers."""
    return tuple(layer.strides if isinstance(layer, ConvParams) else None
                 for layer in package.layers)


def _integer_op(x: jax.Array, kernel: jax.Array, strides: tuple[int, int] | None) -> jax.Array:
    """s8 x s8 -> s32: a matmul (``strides`` None) or a VALID NHWC convolution."""
    if strides is None:
        return jax.lax.dot_general(x, kernel, (((1,), (0,)), ((), ())),
                                   preferred_element_type=jnp.int32)
    return jax.lax.conv_general_dilated(x, kernel, strides, "VALID",
                                        dimension_numbers=CONV_DIMENSIONS,
                                        preferred_element_type=jnp.int32)


def _unsigned_op(codes: jax.Array, kernel: jax.Array,
                 strides: tuple[int, int] | None) -> jax.Array:
    """The exact int32 result of unsigned codes ``[0, 255]`` times an s8 kernel, on the s8 path:
    ``(codes - 128) x kernel + 128 * sum(kernel)`` (the sum over the contraction axes; with VALID
    padding every output sees the whole kernel)."""
    shifted = (codes.astype(jnp.int16) - 128).astype(jnp.int8)
    column_sum = jnp.sum(kernel.astype(jnp.int32), axis=tuple(range(kernel.ndim - 1)))
    return _integer_op(shifted, kernel, strides) + 128 * column_sum


def _per_sample(quantize, x: jax.Array, bits: int) -> tuple[jax.Array, jax.Array]:
    """Per-row quantization of each sample's whole ``[H, W, C]`` map (one scale per sample);
    the scale is shaped to broadcast against ``x``."""
    codes, scale = quantize(x.reshape(x.shape[0], -1), bits)
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    return codes.reshape(x.shape), scale.reshape(shape)


def integer_layer(
    x: jax.Array, layer: dict[str, jax.Array], activation_bits: int, mode: str = "signed",
    strides: tuple[int, int] | None = None, input_scale: float | None = None,
) -> jax.Array:
    """One integer layer (dense, or conv when ``strides`` is given).

    ``mode``: ``"signed"`` quantizes each sample to signed codes, ``"unsigned"`` to unsigned
    codes (non-negative inputs), and ``"codes"`` takes ``x`` as exact unsigned integer codes
    worth ``input_scale`` each (pixel observations, static codes). Then the s8 kernel product
    in int32, rescaled by ``input scale * kernel_scale``, plus the bias.
    """
    acc, x_scale = integer_accumulator(x, layer, activation_bits, mode, strides, input_scale)
    return acc.astype(jnp.float32) * (x_scale * layer["kernel_scale"]) + layer["bias"]


def integer_accumulator(
    x: jax.Array, layer: dict[str, jax.Array], activation_bits: int, mode: str,
    strides: tuple[int, int] | None, input_scale: float | jax.Array | None,
) -> tuple[jax.Array, jax.Array]:
    """:func:`integer_layer`'s int32 product and its input scale, before the rescale."""
    kernel = layer["kernel"]
    if mode == "codes":
        acc = _unsigned_op(x.astype(jnp.uint8), kernel, strides)
        x_scale = jnp.float32(input_scale)
    elif mode == "unsigned":
        codes, x_scale = _per_sample(quantize_rows_unsigned, x.astype(jnp.float32),
                                     activation_bits)
        acc = _unsigned_op(codes, kernel, strides)
    else:
        codes, x_scale = _per_sample(quantize_rows, x.astype(jnp.float32), activation_bits)
        acc = _integer_op(codes, kernel, strides)
    return acc, x_scale


def float_layer(x: jax.Array, layer: dict[str, jax.Array],
                strides: tuple[int, int] | None = None) -> jax.Array:
    """One float layer (dense, or conv when ``strides`` is given) computed in the kernel's
    dtype, accumulated in float32."""
    kernel = layer["kernel"]
    x = x.astype(kernel.dtype)
    if strides is None:
        out = jax.lax.dot_general(x, kernel, (((1,), (0,)), ((), ())),
                                  preferred_element_type=jnp.float32)
    else:
        out = jax.lax.conv_general_dilated(x, kernel, strides, "VALID",
                                           dimension_numbers=CONV_DIMENSIONS,
                                           preferred_element_type=jnp.float32)
    return out + layer["bias"]


def forward(
    arrays: PackageArrays,
    observations: jax.Array,
    *,
    activation: str,
    output_activation: str,
    activation_bits: int | None,
    unsigned_activations: bool = False,
    geometry: Geometry | None = None,
    input_scale: float | None = None,
    affine_bits: int | None = None,
) -> jax.Array:
    """Pure forward pass over ``[batch, features]`` observations, or ``uint8 [batch, H, W, C]``
    codes when ``input_scale`` is given.

    ``unsigned_activations``: ReLU-fed integer layers quantize their input to unsigned codes.
    ``geometry``: :func:`package_geometry` (None: every layer dense).
    ``affine_bits``: float layers round their input to that many bits on the affine grid of
    their ``input_range`` (each sample's own range where they have none).
    """
    geometry = geometry or (None,) * len(arrays)
    x = observations if input_scale is not None else observations.astype(jnp.float32)
    code_scale = input_scale  # what one code of x is worth, while x holds exact codes
    for i, layer in enumerate(arrays):
        strides = geometry[i]
        if strides is None and x.ndim > 2:  # the first dense layer after the convolutions
            x = x.reshape(x.shape[0], -1)
        if "kernel_scale" in layer:
            assert activation_bits is not None
            if code_scale is not None:
                mode = "codes"
            elif unsigned_activations and i > 0 and activation == "relu":
                mode = "unsigned"
            else:
                mode = "signed"
            acc, x_scale = integer_accumulator(x, layer, activation_bits, mode, strides,
                                               code_scale)
            if "multiplier" in layer:  # static codes for the next layer; the clip is the ReLU
                x = requantize_codes(acc, layer["bias_codes"], layer["multiplier"], jnp)
                code_scale = arrays[i + 1]["code_scale"]
                continue
            code_scale = None
            x = acc.astype(jnp.float32) * (x_scale * layer["kernel_scale"]) + layer["bias"]
        else:
            if code_scale is not None:  # pixel codes into a float first layer
                x = x.astype(jnp.float32) * jnp.float32(code_scale)
                code_scale = None
            if affine_bits is not None:
                lo, hi = (affine_range(x, jnp) if "input_range" not in layer
                          else (layer["input_range"][0], layer["input_range"][1]))
                x = affine_fake_quant(x, lo, hi, affine_bits, jnp)
            x = float_layer(x, layer, strides)
        act = activation if i < len(arrays) - 1 else output_activation
        x = ACTIVATIONS[act](x)
    return x


def package_forward(package: PolicyPackage) -> Callable[[PackageArrays, jax.Array], jax.Array]:
    """:func:`forward` with ``package``'s static settings bound (jit it)."""
    return functools.partial(
        forward,
        activation=package.activation,
        output_activation=package.output_activation,
        activation_bits=package.activation_bits,
        unsigned_activations=package.unsigned_activations,
        geometry=package_geometry(package),
        input_scale=package.input_scale,
        affine_bits=package.affine_bits,
    )


def make_reference_forward(package: PolicyPackage) -> Callable[[Any], np.ndarray]:
    """A jitted ``observations -> outputs [batch, k]`` for this package (its observation
    normalizer, if any, applied first in fp32, as every runtime does; pixel packages take uint8
    codes, see :meth:`PolicyPackage.prepare`).

    This is the numerics reference, not the fast actor path (see ``actorq.runtime``).
    """
    arrays = package_arrays(package)
    fn = jax.jit(package_forward(package))
    return lambda observations: np.asarray(
        fn(arrays, jnp.asarray(package.prepare(observations))))
