"""Per-layer weight distributions of a trained policy and what an int8 grid does to them.

The QuaRL authors' code plots each layer's weight histogram with the quantization grid over it;
this module draws the same for a packaged policy and puts numbers on it, for two grids:
- the paper's per-tensor affine grid (``affine_int<b>``: one scale and zero point per layer);
- actorq's per-output-channel symmetric grid (``rtn_int<b>``, the recipe's weight grid).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from actorq.quantization.numerics import affine_fake_quant
from actorq.quantization.package import PolicyPackage

HISTOGRAM_BINS = 120


def dequantized_kernels(package: PolicyPackage) -> list[np.ndarray]:
    """Each layer's kernel as float32 values: integer codes times their per-channel scales,
    float kernels as they are."""
    kernels = []
    for layer in package.layers:
        kernel = np.asarray(layer.kernel, np.float32)
        if layer.is_integer:
            kernel = kernel * np.asarray(layer.kernel_scale, np.float32)  # scale of the out axis
        kernels.append(kernel)
    return kernels


def affine_step(kernel: np.ndarray, bits: int) -> float:
    """The per-tensor affine grid's step over ``kernel``'s range (widened to hold 0)."""
    lo, hi = min(float(kernel.min()), 0.0), max(float(kernel.max()), 0.0)
    return (hi - lo) / (2**bits - 1) or 1.0


def _grid_stats(kernel: np.ndarray, quantized: np.ndarray) -> dict[str, float]:
    norm = float(np.linalg.norm(kernel))
    nonzero = kernel != 0
    return {
        "relative_rms_error": float(np.linalg.norm(quantized - kernel)) / norm if norm else 0.0,
        "zeroed_fraction": float(np.mean((quantized == 0) & nonzero)),
    }


def layer_weight_stats(fp32: PolicyPackage, per_channel: PolicyPackage,
                       bits: int = 8) -> list[dict[str, Any]]:
    """One row per layer of the fp32 package: the weights' range and spread, and for each grid
    its step, the relative RMS error ``||W_q - W|| / ||W||`` and the fraction of non-zero weights
    that round to 0. ``per_channel`` is the same policy under ``rtn_int<bits>``."""
    rows = []
    channel_kernels = dequantized_kernels(per_channel)
    for index, (layer, channel_q) in enumerate(zip(fp32.layers, channel_kernels, strict=True)):
        kernel = np.asarray(layer.kernel, np.float32)
        lo, hi = float(kernel.min()), float(kernel.max())
        affine_q = affine_fake_quant(kernel, np.float32(lo), np.float32(hi), bits)
        scales = np.asarray(per_channel.layers[index].kernel_scale, np.float32)
        rows.append({
            "layer": index,
            "shape": list(kernel.shape),
            "min": lo, "max": hi, "std": float(kernel.std()),
            "abs_p99": float(np.quantile(np.abs(kernel), 0.99)),
            "affine_step": affine_step(kernel, bits),
            "affine": _grid_stats(kernel, affine_q),
            "channel_step_median": float(np.median(scales)),
            "channel_step_max": float(scales.max()),
            "per_channel": _grid_stats(kernel, channel_q),
        })
    return rows


def weight_stats_markdown(rows: Sequence[dict[str, Any]], bits: int = 8) -> str:
    """The rows of :func:`layer_weight_stats` as a Markdown table."""
    lines = [
        f"| layer | shape | min / max | std | int{bits} step: per-tensor affine | per-channel "
        "median (max) | rel. RMS error: affine | per-channel | rounded to 0: affine | "
        "per-channel |",
        "|---:|---|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['layer']} | {' x '.join(map(str, r['shape']))} | {r['min']:.3g} / "
            f"{r['max']:.3g} | {r['std']:.3g} | {r['affine_step']:.3g} | "
            f"{r['channel_step_median']:.3g} ({r['channel_step_max']:.3g}) | "
            f"{100 * r['affine']['relative_rms_error']:.2f}% | "
            f"{100 * r['per_channel']['relative_rms_error']:.2f}% | "
            f"{100 * r['affine']['zeroed_fraction']:.2f}% | "
            f"{100 * r['per_channel']['zeroed_fraction']:.2f}% |")
    return "\n".join(lines) + "\n"


def plot_weight_distributions(fp32: PolicyPackage, path: str | Path, title: str,
                              bits: int = 8) -> Path:
    """One panel per layer: the histogram of its fp32 weights (log counts) with the per-tensor
    affine ``bits``-bit grid drawn over it (every level as a thin line), as the paper's code
    plotted them."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    layers = fp32.layers
    cols = min(len(layers), 4)
    rows = -(-len(layers) // cols)
    fig = Figure(figsize=(3.6 * cols, 3.0 * rows))
    FigureCanvasAgg(fig)
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    for index, (ax, layer) in enumerate(zip(axes, layers, strict=False)):
        kernel = np.asarray(layer.kernel, np.float32).ravel()
        lo = min(float(kernel.min()), 0.0)
        step = affine_step(kernel, bits)
        ax.vlines(lo + step * np.arange(2**bits), 0, 1, transform=ax.get_xaxis_transform(),
                  colors="tab:red", linewidth=0.25, alpha=0.35)
        ax.hist(kernel, bins=HISTOGRAM_BINS, color="tab:blue", log=True)
        shape = " x ".join(map(str, np.shape(layer.kernel)))
        ax.set_title(f"layer {index} [{shape}], int{bits} step {step:.2g}", fontsize="small")
        ax.set_xlabel("weight")
        ax.grid(alpha=0.2)
    for ax in axes[len(layers):]:
        ax.set_visible(False)
    fig.suptitle(f"{title}: fp32 weights, per-tensor affine int{bits} grid in red",
                 fontsize="medium")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out
