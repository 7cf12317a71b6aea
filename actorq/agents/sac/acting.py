"""SAC actors: sample from the quantized tanh-Gaussian policy in numpy (no JAX here).

The packaged policy outputs ``[k, 2A]``: the mean of the pre-tanh Gaussian in the first ``A``
columns, its log-std in the last ``A``.
"""

from __future__ import annotations

import numpy as np

from actorq.core import Exploration


def split_outputs(
    outputs: np.ndarray, log_std_min: float, log_std_max: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, clipped log_std)`` from policy outputs ``[..., 2A]`` (float32)."""
    outputs = np.asarray(outputs, np.float32)
    if outputs.shape[-1] % 2:
        raise ValueError(f"SAC policy outputs must have an even width, got {outputs.shape}")
    mean, log_std = np.split(outputs, 2, axis=-1)
    return mean, np.clip(log_std, log_std_min, log_std_max)


def tanh_gaussian_exploration(log_std_min: float, log_std_max: float, seed: int) -> Exploration:
    """Samples ``a = tanh(mean + exp(clip(log_std)) * eps)``, ``eps ~ N(0, I)``: SAC's own
    stochastic policy is its exploration."""
    rng = np.random.default_rng(seed)

    def explore(outputs: np.ndarray, step: int) -> np.ndarray:
        del step
        mean, log_std = split_outputs(outputs, log_std_min, log_std_max)
        eps = rng.standard_normal(mean.shape, dtype=np.float32)
        return np.tanh(mean + np.exp(log_std) * eps).astype(np.float32)

    return explore


def deterministic_action(outputs: np.ndarray) -> np.ndarray:
    """Evaluation: ``tanh(mean)``, the mode of the squashed policy's pre-tanh Gaussian."""
    mean = np.split(np.asarray(outputs, np.float32), 2, axis=-1)[0]
    return np.tanh(mean).astype(np.float32)
