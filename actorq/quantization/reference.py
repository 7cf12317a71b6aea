"""The reference forward pass of a policy package, in JAX.

This defines what every actor runtime must compute. Integer packages run a real
int8 x int8 -> int32 matmul (``preferred_element_type=int32`` on s8 operands), with dynamic per-row
activation quantization, then rescale by ``activation_scale * kernel_scale`` and add the bias.
Float packages compute in the kernel's dtype with float32 accumulation.

Unsigned activation codes (``PolicyPackage.unsigned_activations``) reach ``[0, 255]``, which s8
cannot hold. They go to the same s8 matmul shifted by -128, and ``128 * column_sum(kernel)`` is
added back to the int32 accumulator: the same integers, on XLA's fast int8 path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from actorq.networks.mlp import ACTIVATIONS
from actorq.quantization.numerics import quantize_rows, quantize_rows_unsigned
from actorq.quantization.package import PolicyPackage

PackageArrays = list[dict[str, jax.Array]]


def package_arrays(package: PolicyPackage) -> PackageArrays:
    """The package's arrays as a pytree (a jit argument, so new versions do not recompile)."""
    arrays = []
    for layer in package.layers:
        entry = {"kernel": jnp.asarray(layer.kernel), "bias": jnp.asarray(layer.bias)}
        if layer.kernel_scale is not None:
            entry["kernel_scale"] = jnp.asarray(layer.kernel_scale)
        arrays.append(entry)
    return arrays


def dense_int(
    x: jax.Array, layer: dict[str, jax.Array], activation_bits: int, unsigned: bool = False
) -> jax.Array:
    """One integer dense layer: quantize rows, s8 x s8 -> s32 matmul, rescale, add bias.

    ``unsigned``: the rows are non-negative and quantized to unsigned codes (module docstring).
    """
    dims = (((1,), (0,)), ((), ()))
    if unsigned:
        codes, x_scale = quantize_rows_unsigned(x.astype(jnp.float32), activation_bits)
        shifted = (codes.astype(jnp.int16) - 128).astype(jnp.int8)
        acc = jax.lax.dot_general(
            shifted, layer["kernel"], dims, preferred_element_type=jnp.int32
        ) + 128 * jnp.sum(layer["kernel"].astype(jnp.int32), axis=0)
    else:
        xq, x_scale = quantize_rows(x.astype(jnp.float32), activation_bits)
        acc = jax.lax.dot_general(xq, layer["kernel"], dims, preferred_element_type=jnp.int32)
    return acc.astype(jnp.float32) * (x_scale * layer["kernel_scale"]) + layer["bias"]


def dense_float(x: jax.Array, layer: dict[str, jax.Array]) -> jax.Array:
    """One float dense layer computed in the kernel's dtype, accumulated in float32."""
    kernel = layer["kernel"]
    out = jax.lax.dot_general(
        x.astype(kernel.dtype), kernel, (((1,), (0,)), ((), ())),
        preferred_element_type=jnp.float32,
    )
    return out + layer["bias"]


def forward(
    arrays: PackageArrays,
    observations: jax.Array,
    *,
    activation: str,
    output_activation: str,
    activation_bits: int | None,
    unsigned_activations: bool = False,
) -> jax.Array:
    """Pure forward pass over ``[batch, features]`` observations.

    ``unsigned_activations``: ReLU-fed integer layers quantize their input to unsigned codes.
    """
    x = observations.astype(jnp.float32)
    for i, layer in enumerate(arrays):
        if "kernel_scale" in layer:
            assert activation_bits is not None
            unsigned = unsigned_activations and i > 0 and activation == "relu"
            x = dense_int(x, layer, activation_bits, unsigned)
        else:
            x = dense_float(x, layer)
        act = activation if i < len(arrays) - 1 else output_activation
        x = ACTIVATIONS[act](x)
    return x


def make_reference_forward(package: PolicyPackage) -> Callable[[Any], np.ndarray]:
    """A jitted ``observations [batch, d] -> outputs [batch, k]`` for this package (its
    observation normalizer, if any, applied first in fp32, as every runtime does).

    This is the numerics reference, not the fast actor path (see ``actorq.runtime.backends``).
    """
    arrays = package_arrays(package)
    fn = jax.jit(
        lambda a, x: forward(
            a,
            x,
            activation=package.activation,
            output_activation=package.output_activation,
            activation_bits=package.activation_bits,
            unsigned_activations=package.unsigned_activations,
        )
    )
    return lambda observations: np.asarray(
        fn(arrays, jnp.asarray(package.normalize(np.asarray(observations, np.float32)))))
