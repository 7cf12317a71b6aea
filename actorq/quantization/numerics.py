"""Symmetric integer numerics, bit-for-bit those of AQT's ``IntSymmetric`` + abs-max calibration;
and the uniform affine numerics of the QuaRL paper (Krishnamoorthi, 2018), simulated in float.

For ``bits`` b the largest magnitude maps to the edge of the last bucket, ``2**(b-1) - 0.5``
(AQT: preserve_zero=True, preserve_max_val=False); values are clipped to ``+-(2**(b-1) - 1)``
and rounded half to even. An all-zero slice gets scale 1 (AQT does the same).

Unsigned codes (non-negative rows after a ReLU) follow the same rule on the grid
``[0, 2**b - 1]``: the row maximum maps to ``2**b - 0.5``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # JAX only for quantize_rows: actor runtimes use the NumPy helpers alone
    import jax


# The package's activations in NumPy fp32 (the names of ``actorq.networks.mlp.ACTIVATIONS``).
NUMPY_ACTIVATIONS = {
    "relu": lambda v: np.maximum(v, np.float32(0)),
    "tanh": np.tanh,
    "elu": lambda v: np.where(v > 0, v, np.expm1(np.minimum(v, 0))).astype(np.float32),
    "none": lambda v: v,
}


def quant_bound(bits: int) -> float:
    """The float that the abs-max of a slice is scaled to."""
    return 2.0 ** (bits - 1) - 0.5


def max_int(bits: int) -> int:
    """The largest representable magnitude."""
    return 2 ** (bits - 1) - 1


def unsigned_quant_bound(bits: int) -> float:
    """The float that the maximum of a non-negative slice is scaled to (unsigned codes)."""
    return 2.0**bits - 0.5


def max_uint(bits: int) -> int:
    """The largest unsigned code."""
    return 2**bits - 1


def check_bits(bits: int) -> int:
    """Validates an integer bit width (2..8: the values must fit an int8 container)."""
    if not isinstance(bits, int | np.integer) or not 2 <= int(bits) <= 8:
        raise ValueError(f"integer bit width must be in 2..8, got {bits!r}")
    return int(bits)


def quantize_rows(x: jax.Array, bits: int) -> tuple[jax.Array, jax.Array]:
    """Dynamic per-row activation quantization: returns (int8 values, float32 scale [rows, 1])."""
    import jax
    import jax.numpy as jnp

    abs_max = jnp.max(jnp.abs(x), axis=-1, keepdims=True)
    abs_max = jnp.where(abs_max == 0.0, jnp.ones_like(abs_max), abs_max)
    scale = abs_max / quant_bound(bits)
    limit = float(max_int(bits))
    clipped = jnp.clip(x * jax.lax.reciprocal(scale), -limit, limit)
    q = jax.lax.round(clipped, jax.lax.RoundingMethod.TO_NEAREST_EVEN)
    return q.astype(jnp.int8), scale.astype(jnp.float32)


def quantize_rows_unsigned(x: jax.Array, bits: int) -> tuple[jax.Array, jax.Array]:
    """Per-row quantization of non-negative rows to unsigned codes: (uint8 values, float32
    scale [rows, 1]). Negative inputs clip to 0 (the ReLU they come from)."""
    import jax
    import jax.numpy as jnp

    row_max = jnp.max(x, axis=-1, keepdims=True)
    row_max = jnp.where(row_max <= 0.0, jnp.ones_like(row_max), row_max)
    scale = row_max / unsigned_quant_bound(bits)
    clipped = jnp.clip(x * jax.lax.reciprocal(scale), 0.0, float(max_uint(bits)))
    q = jax.lax.round(clipped, jax.lax.RoundingMethod.TO_NEAREST_EVEN)
    return q.astype(jnp.uint8), scale.astype(jnp.float32)


def quantize_rows_np(x: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`quantize_rows` (used by non-XLA actor runtimes)."""
    abs_max = np.max(np.abs(x), axis=-1, keepdims=True).astype(np.float32)
    abs_max[abs_max == 0.0] = 1.0
    # Multiply by the reciprocal: that is what XLA compiles ``abs_max / bound`` into, so the
    # two twins agree to the bit.
    scale = (abs_max * np.float32(1.0 / quant_bound(bits))).astype(np.float32)
    limit = float(max_int(bits))
    q = np.rint(np.clip(x * (np.float32(1.0) / scale), -limit, limit))  # rint: half to even
    return q.astype(np.int8), scale


def quantize_rows_unsigned_np(x: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`quantize_rows_unsigned`: (uint8 codes, float32 scale [rows, 1])."""
    row_max = np.max(x, axis=-1, keepdims=True).astype(np.float32)
    row_max[row_max <= 0.0] = 1.0
    scale = (row_max * np.float32(1.0 / unsigned_quant_bound(bits))).astype(np.float32)
    q = np.rint(np.clip(x * (np.float32(1.0) / scale), 0.0, float(max_uint(bits))))
    return q.astype(np.uint8), scale


def affine_params(lo, hi, bits: int, xp=np):
    """Scale and zero point of the ``bits``-bit affine grid over ``[lo, hi]`` (Krishnamoorthi,
    2018): the range is widened to hold 0, so that 0 is exact; ``scale = (hi - lo) / (2**b - 1)``
    (1 for an empty range), ``zero_point = round(-lo / scale)``. ``xp``: numpy or jax.numpy."""
    lo = xp.minimum(lo, 0.0)
    hi = xp.maximum(hi, 0.0)
    scale = (hi - lo) / np.float32(2**bits - 1)
    scale = xp.where(scale == 0.0, np.float32(1.0), scale)
    return scale, xp.round(-lo / scale)


def affine_fake_quant(x, lo, hi, bits: int, xp=np):
    """``x`` rounded to the ``bits``-bit affine grid of ``[lo, hi]`` and back to float:
    ``(clip(round(x / scale) + zero_point, 0, 2**b - 1) - zero_point) * scale``. Half to even
    (NumPy's and XLA's round). ``lo``/``hi`` broadcast against ``x`` (static per-tensor ranges,
    or one per sample)."""
    scale, zero_point = affine_params(lo, hi, bits, xp)
    q = xp.clip(xp.round(x / scale) + zero_point, 0.0, float(2**bits - 1))
    return ((q - zero_point) * scale).astype(np.float32)


def affine_range(x, xp=np):
    """Each sample's own ``(lo, hi)`` over all but the batch axis, shaped to broadcast against
    ``x`` (the dynamic range of an uncalibrated affine package)."""
    axes = tuple(range(1, x.ndim))
    return xp.min(x, axis=axes, keepdims=True), xp.max(x, axis=axes, keepdims=True)


# Static 8-bit codes between integer convolutions: ONNX's QLinearConv requantization (what ONNX
# Runtime's MLAS computes), so the fast fused kernel is the reference itself.
CODE_MAX = 255


def requantize_constants(x_scale, kernel_scale, bias, code_scale) -> tuple[np.ndarray, np.ndarray]:
    """The int32 bias and the fp32 multiplier of a layer whose ReLU output is requantized to
    static unsigned 8-bit codes worth ``code_scale``: ``bias_codes = round(bias / (x_scale *
    kernel_scale))`` (0 where that product is 0; clipped to int32) and ``multiplier = x_scale *
    kernel_scale / code_scale``, both per output channel, in fp32 in that order (QLinearConv's
    ``X_scale * W_scale / Y_scale``)."""
    product = (np.float32(x_scale) * np.asarray(kernel_scale, np.float32)).astype(np.float32)
    safe = np.where(product == 0, np.float32(1), product)
    ratio = np.where(product == 0, np.float32(0), np.asarray(bias, np.float32) / safe)
    limit = np.float32(2.0**31 - 128)  # the largest fp32 below 2**31
    bias_codes = np.rint(np.clip(ratio, -limit, limit)).astype(np.int32)
    multiplier = (product / np.float32(code_scale)).astype(np.float32)
    return bias_codes, multiplier


def requantize_codes(acc, bias_codes, multiplier, xp=np):
    """Static unsigned codes ``clip(round_half_even(fp32(acc + bias_codes) * multiplier), 0,
    255)`` from an int32 accumulator; the clip at 0 is the layer's ReLU. ``xp``: numpy or
    jax.numpy (both round half to even)."""
    scaled = (acc + bias_codes).astype(np.float32) * multiplier
    return xp.clip(xp.round(scaled), 0.0, float(CODE_MAX)).astype(np.uint8)
