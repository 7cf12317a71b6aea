"""Worked example: a new quantizer in one file.

``int8_p999`` clips each output channel's weights at their 99.9th percentile of magnitude
before int8 quantization, trading a little clipping error on outliers for finer resolution
everywhere else. It reuses the package format and the int8 runtime unchanged; the only new
thing is how the kernel's integers and scales are chosen. Registering it makes
``--config.quantizer=int8_p999`` work everywhere.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from actorq.quantization.builtin import IntQuantizer
from actorq.quantization.numerics import max_int, quant_bound
from actorq.quantization.registry import register_quantizer


@dataclasses.dataclass(frozen=True)
class PercentileInt8Quantizer(IntQuantizer):
    """int8 weights calibrated to a per-channel magnitude percentile instead of the abs-max."""

    percentile: float = 99.9

    def quantize_kernel(self, kernel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        kernel = np.asarray(kernel, np.float32)
        # Per output channel: over every other axis ([in], or [kh, kw, in] for convolutions).
        axes = tuple(range(kernel.ndim - 1))
        bound = np.percentile(np.abs(kernel), self.percentile, axis=axes).astype(np.float32)
        bound[bound == 0.0] = 1.0
        scale = bound / np.float32(quant_bound(self.bits))
        limit = max_int(self.bits)
        values = np.clip(np.rint(kernel / scale), -limit, limit).astype(np.int8)
        return values, scale


register_quantizer("int8_p999", lambda: PercentileInt8Quantizer("int8_p999", bits=8))
