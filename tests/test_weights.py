"""Weight-distribution statistics (``actorq.analysis.weights``) on hand-computed layers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from actorq.analysis.weights import (
    affine_step,
    dequantized_kernels,
    layer_weight_stats,
    plot_weight_distributions,
    weight_stats_markdown,
)
from actorq.quantization.package import DenseParams, PolicyPackage

KERNEL = np.array([[-1.0, 0.5], [0.25, 2.0]], np.float32)
BIAS = np.zeros(2, np.float32)


def _packages() -> tuple[PolicyPackage, PolicyPackage]:
    fp32 = PolicyPackage("fp32", 0, (DenseParams(KERNEL, BIAS),))
    # 2-bit symmetric per-output-channel codes in {-1, 0, 1}: column 0 [-1, 0.25] has scale 1
    # (codes -1, 0); column 1 [0.5, 2] has scale 2 (0.25 rounds to 0, then 1).
    codes = np.array([[-1, 0], [0, 1]], np.int8)
    scales = np.array([1.0, 2.0], np.float32)
    per_channel = PolicyPackage("rtn_int2", 0, (DenseParams(codes, BIAS, scales),),
                                activation_bits=2)
    return fp32, per_channel


def test_stats_of_both_grids_by_hand(tmp_path: Path) -> None:
    fp32, per_channel = _packages()
    np.testing.assert_array_equal(dequantized_kernels(per_channel)[0], [[-1, 0], [0, 2]])
    # 2-bit affine grid over [-1, 2]: step 3 / 3 = 1, levels -1, 0, 1, 2 (0.5 -> 0 half to even).
    assert affine_step(KERNEL, 2) == 1.0
    [row] = layer_weight_stats(fp32, per_channel, bits=2)
    assert row["shape"] == [2, 2] and (row["min"], row["max"]) == (-1.0, 2.0)
    expected = math.sqrt(0.5**2 + 0.25**2) / math.sqrt(1 + 0.25 + 0.0625 + 4)
    for grid in ("affine", "per_channel"):  # both round 0.5 and 0.25 to 0 here
        assert row[grid]["relative_rms_error"] == pytest.approx(expected, rel=1e-6)
        assert row[grid]["zeroed_fraction"] == 0.5
    assert (row["channel_step_median"], row["channel_step_max"]) == (1.5, 2.0)
    assert row["std"] == pytest.approx(float(KERNEL.std()))
    text = weight_stats_markdown([row], bits=2)
    assert "| 0 | 2 x 2 | -1 / 2 |" in text and "| 50.00% | 50.00% |" in text
    png = plot_weight_distributions(fp32, tmp_path / "w.png", "hand-made", bits=2)
    assert png.stat().st_size > 1000


def test_int8_grid_of_a_wide_layer_is_finer_per_channel() -> None:
    """A layer whose one column holds a large weight: the per-tensor step is set by it, the
    per-channel steps of the other columns are not, so per channel loses less."""
    rng = np.random.default_rng(0)
    kernel = rng.normal(0, 0.1, (16, 8)).astype(np.float32)
    kernel[0, 0] = 5.0
    fp32 = PolicyPackage("fp32", 0, (DenseParams(kernel, np.zeros(8, np.float32)),))
    scales = np.abs(kernel).max(axis=0) / 127
    codes = np.round(kernel / scales).astype(np.int8)
    per_channel = PolicyPackage("rtn_int8", 0, (DenseParams(codes, np.zeros(8, np.float32),
                                                            scales.astype(np.float32)),),
                                activation_bits=8)
    [row] = layer_weight_stats(fp32, per_channel)
    assert row["affine_step"] == pytest.approx((5.0 - kernel.min()) / 255, rel=1e-6)
    assert row["channel_step_median"] < row["affine_step"] / 5
    assert row["per_channel"]["zeroed_fraction"] < row["affine"]["zeroed_fraction"]
