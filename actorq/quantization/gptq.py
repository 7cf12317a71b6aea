"""``gptq_uact_int<b>`` and ``fp32head_gptq_uact_int<b>``: weights rounded with GPTQ on replay
observations, unsigned activation codes after each ReLU.

Round-to-nearest (``int<b>``) rounds every weight on its own. On a converged DQN CartPole policy
(256-256, Q-values ~90 apart from gaps of ~0.3) that moves the gap between the two actions'
Q-values by more than the gap in 14-43% of states, and the greedy action flips there. Simulated
per layer, the weight rounding of the 256 x 256 layer and of the head cause almost all of it;
activation rounding alone flips 4-9% (signed) or 4% (unsigned).

GPTQ (Frantar et al., 2023) keeps the per-output-channel scales of ``int<b>`` but picks the
integers one input row at a time, and pushes each row's rounding error onto the rows not yet
quantized, weighted by the inverse of ``H = X^T X`` over calibration inputs ``X``. So the layer's
output on inputs like ``X`` is kept, not each weight. Layers are quantized in order, each on the
inputs that the already-quantized layers before it produce, with the package's own activation
numerics. The result is an ordinary integer package: every runtime runs it unchanged.

Calibration inputs come from :meth:`GptqIntQuantizer.with_calibration`: the learner passes the
fixed batch of replay observations it also measures policy drift on, and ``ptq_study`` passes
fp32 rollouts of other episode seeds than it evaluates on. Before any calibration data exists
(the very first publish, when replay is empty) the integers are round-to-nearest.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from actorq.networks.mlp import MLP, mlp_layers
from actorq.quantization.builtin import IntQuantizer
from actorq.quantization.numerics import max_int, quantize_rows_np, quantize_rows_unsigned_np
from actorq.quantization.package import DenseParams, PolicyPackage
from actorq.quantization.registry import register_quantizer

# Rows of the kernel quantized together before their error reaches the remaining rows in one
# matrix product (the blocked form of GPTQ: the same result, BLAS speed on 2048-wide layers).
BLOCK_ROWS = 128


def gptq_integers(kernel: np.ndarray, scale: np.ndarray, inputs: np.ndarray, bits: int,
                  damping: float = 0.01) -> np.ndarray:
    """GPTQ's integers for one ``[in, out]`` kernel with fixed per-output ``scale``.

    Args:
      kernel: the float kernel.
      scale: ``[out]`` scales (those of round-to-nearest, so the value range is unchanged).
      inputs: ``[n, in]`` calibration inputs of this layer, as the integer layer sees them.
      bits: integer width; values are clipped to ``+-(2**(bits-1) - 1)``.
      damping: added to ``H``'s diagonal, as a fraction of its mean, for a stable inverse.
    """
    weights = np.array(kernel, np.float64)
    n_in = weights.shape[0]
    x = np.asarray(inputs, np.float64)
    hessian = x.T @ x
    dead = np.diag(hessian) == 0.0  # inputs never active in calibration: plain rounding
    hessian[dead, dead] = 1.0
    hessian += damping * np.mean(np.diag(hessian)) * np.eye(n_in)
    # Upper Cholesky factor of H^-1: row i holds how row i's error spreads to the later rows.
    spread = np.linalg.cholesky(np.linalg.inv(hessian)).T
    step = np.asarray(scale, np.float64).reshape(1, -1)
    step = np.where(step == 0.0, 1.0, step)  # an all-zero column: integers 0 whatever the step
    limit = max_int(bits)
    values = np.zeros(weights.shape, np.int8)
    for start in range(0, n_in, BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n_in)
        block = weights[start:stop].copy()
        errors = np.zeros_like(block)
        for j in range(stop - start):
            i = start + j
            q = np.clip(np.rint(block[j] / step[0]), -limit, limit)
            values[i] = q.astype(np.int8)
            errors[j] = (block[j] - q * step[0]) / spread[i, i]
            block[j + 1:] -= np.outer(spread[i, i + 1:stop], errors[j])
        weights[stop:] -= spread[start:stop, stop:].T @ errors
    return values


@dataclasses.dataclass(frozen=True)
class GptqIntQuantizer(IntQuantizer):
    """:class:`IntQuantizer` (unsigned activations) with GPTQ-rounded weights.

    ``calibration``: observations ``[n, obs]``; None gives round-to-nearest integers.
    ``float_head``: keep the output layer in fp32.
    """

    unsigned_activations: bool = True
    float_head: bool = False
    damping: float = 0.01
    calibration: np.ndarray | None = dataclasses.field(default=None, compare=False, repr=False)

    def with_calibration(self, observations: np.ndarray) -> GptqIntQuantizer:
        """This quantizer, calibrated on ``observations`` (``[n, obs]``)."""
        observations = np.asarray(observations, np.float32)
        if observations.ndim != 2 or len(observations) == 0:
            raise ValueError(f"calibration observations must be [n, obs], got "
                             f"{observations.shape}")
        return dataclasses.replace(self, calibration=observations)

    def quantize(self, params: Any, network: MLP, version: int) -> PolicyPackage:
        if getattr(network, "conv_layers", ()):
            raise ValueError(f"quantizer {self.spec!r} handles dense networks only; this one "
                             "has convolutions")
        package = super().quantize(params, network, version)  # scales, checks, RTN integers
        float_layers = mlp_layers(params)
        layers = list(package.layers)
        if self.float_head:
            kernel, bias = float_layers[-1]
            layers[-1] = DenseParams(np.asarray(kernel, np.float32), np.asarray(bias, np.float32))
        if self.calibration is not None:
            x = self.calibration.astype(np.float32)
            for i, layer in enumerate(layers):
                if layer.kernel_scale is not None:
                    # What the integer layer sees: the rows dequantized with the package's numerics.
                    if package.unsigned_input(i):
                        codes, row_scale = quantize_rows_unsigned_np(x, self.bits)
                    else:
                        codes, row_scale = quantize_rows_np(x, self.bits)
                    seen = codes.astype(np.float32) * row_scale
                    kernel = np.asarray(float_layers[i][0], np.float32)
                    values = gptq_integers(kernel, layer.kernel_scale, seen, self.bits,
                                           self.damping)
                    layer = dataclasses.replace(layer, kernel=values)
                    layers[i] = layer
                    x = (seen @ (values.astype(np.float32) * layer.kernel_scale)) + layer.bias
                else:
                    x = x @ layer.kernel.astype(np.float32) + layer.bias
                if i < len(layers) - 1:
                    x = np.maximum(x, 0.0)  # hidden layers: ReLU (checked by IntQuantizer)
        return dataclasses.replace(package, layers=tuple(layers))


register_quantizer(
    "gptq_uact_int",
    lambda bits: GptqIntQuantizer(f"gptq_uact_int{bits}", bits),
    parametric=True,
)
register_quantizer(
    "fp32head_gptq_uact_int",
    lambda bits: GptqIntQuantizer(f"fp32head_gptq_uact_int{bits}", bits, float_head=True),
    parametric=True,
)
