"""The int8 recipe: input smoothing folded into the first layer, and bias correction.

Plain round-to-nearest (``rtn_int<b>``) needed a per-task choice of which layer stays fp32. Two
failure modes were measured, and each has a cheap fix at publish time, applied here to every layer
so that no layer has to stay fp32:

- **Observation features of different scales.** Per-row activation quantization gives a whole
  observation one scale, set by its largest feature (a velocity on cheetah_run), so the small
  features round to a few steps. The recipe divides feature ``j`` by ``s_j`` in fp32 before the
  first layer (the package's ``input_smoothing``) and multiplies row ``j`` of the first kernel
  by ``s_j`` before quantizing it: the same network, with balanced inputs. As in SmoothQuant
  (Xiao et al., 2023), ``s_j = max|x_j|**alpha / max|W_j|**(1 - alpha)`` over calibration
  observations ``x``, with ``alpha = 0.5``: dividing by the input range alone would move the
  imbalance into the first kernel's rows, which share one scale per output channel.
- **A systematic output shift.** Round-to-nearest weights shift each output by
  ``(W_q - W)^T x``, whose mean over the inputs the network sees does not average out: ReLU
  features have positive means. For a DQN head whose Q-values sit close together that shift
  picks the greedy action. Bias correction (Nagel et al., 2019, "Data-Free Quantization")
  subtracts the expected shift ``(W_q - W)^T E[x]`` from each layer's fp32 bias, with ``E[x]``
  the fp32 network's mean input to the layer over the calibration observations.

Both need calibration observations (:meth:`RecipeIntQuantizer.with_calibration`, in the first
layer's input space, i.e. after the package's observation normalizer): the learner hands over its
fixed batch of replay observations, ``ptq_study`` fp32 rollouts. Before any exist (the very first
publish, with empty replay) the package is plain round-to-nearest. Conv (pixel) policies read
uint8 frames exactly and get round-to-nearest. Packages stay ordinary integer packages: every
runtime runs them unchanged (the smoothing divides in fp32, like the normalizer).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from actorq.networks.mlp import MLP, mlp_layers
from actorq.quantization.base import checked_calibration
from actorq.quantization.builtin import IntQuantizer
from actorq.quantization.numerics import NUMPY_ACTIVATIONS
from actorq.quantization.package import PolicyPackage
from actorq.quantization.registry import register_quantizer

# SmoothQuant's migration strength: 0 leaves the inputs as they are, 1 divides each feature by
# its range and moves the whole imbalance into the first kernel's rows.
SMOOTHING_ALPHA = 0.5
# Calibration rows whose fp32 forward pass gives the layers' mean inputs (bias correction):
# 16 gave the same greedy agreement as 32 and 128 on DQN CartPole (docs/ptq.md), and keeps the
# publish of the paper's 3 x 2048 policy within 2x of round-to-nearest's.
BIAS_CORRECTION_ROWS = 16


def smoothing_factors(observations: np.ndarray, first_kernel: np.ndarray,
                      alpha: float = SMOOTHING_ALPHA) -> np.ndarray:
    """SmoothQuant's per-feature divisors ``max|x_j|**alpha / max|W_j|**(1 - alpha)``.

    Args:
      observations: ``[n, features]`` calibration inputs of the first layer.
      first_kernel: ``[features, out]`` the first layer's float kernel.
      alpha: migration strength in [0, 1].
    Features never seen non-zero, or with an all-zero kernel row, keep divisor 1.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"smoothing alpha must be in [0, 1], got {alpha}")
    x_max = np.max(np.abs(np.asarray(observations, np.float64)), axis=0)
    w_max = np.max(np.abs(np.asarray(first_kernel, np.float64)), axis=1)
    live = (x_max > 0) & (w_max > 0)
    factors = np.ones_like(x_max)
    factors[live] = x_max[live] ** alpha / w_max[live] ** (1.0 - alpha)
    return factors.astype(np.float32)


def corrected_biases(kernels: list[np.ndarray], package: PolicyPackage,
                     inputs: np.ndarray) -> list[np.ndarray]:
    """Each integer layer's bias minus the expected shift of its rounded weights.

    The shift of layer ``i`` is ``E[x_i] @ (W_q - W)``, with ``E[x_i]`` the float network's mean
    input to the layer over ``inputs``. Activation rounding is unbiased (round to nearest), so
    this is the systematic part of the layer's error.

    Args:
      kernels: the float ``[in, out]`` kernels (the first one already smoothed); the float
        biases are the package's.
      package: the round-to-nearest package of those kernels (dense layers).
      inputs: ``[n, in]`` calibration inputs of the first layer (after any smoothing).
    """
    activation = NUMPY_ACTIVATIONS[package.activation]
    x = np.asarray(inputs, np.float32)
    biases = []
    for i, (kernel, layer) in enumerate(zip(kernels, package.layers)):
        last = i == len(kernels) - 1
        bias = layer.bias
        if layer.kernel_scale is not None:
            mean_input = x.mean(axis=0)
            # mean_input @ W comes from the forward pass below where there is one; reading the
            # 2048 x 2048 kernels is what costs on the paper policy.
            y = None if last else x @ kernel
            float_part = mean_input @ kernel if last else y.mean(axis=0)
            # einsum reads the int8 kernel as it is; `@` would first copy it to float (3x the
            # time on the paper policy's 2048 x 2048 layers).
            integer_part = np.einsum("i,ij->j", mean_input, layer.kernel)
            shift = integer_part * layer.kernel_scale - float_part
            bias = (bias - shift).astype(np.float32)
            if not last:
                x = activation(y + layer.bias)
        elif not last:
            x = activation(x @ kernel + layer.bias)
        biases.append(bias)
    return biases


@dataclasses.dataclass(frozen=True)
class RecipeIntQuantizer(IntQuantizer):
    """:class:`IntQuantizer` with input smoothing and bias correction (see the module docstring).

    ``calibration``: ``[n, features]`` first-layer inputs; None gives round-to-nearest.
    """

    alpha: float = SMOOTHING_ALPHA
    smoothing: bool = True
    bias_correction: bool = True
    calibration: np.ndarray | None = dataclasses.field(default=None, compare=False, repr=False)

    def with_calibration(self, observations: np.ndarray) -> RecipeIntQuantizer:
        """This quantizer, calibrated on ``observations`` ``[n, features]`` (the first layer's
        inputs: normalized where the package has a normalizer). Pixel batches ``[n, H, W, C]``
        are accepted and unused (conv policies get round-to-nearest)."""
        observations = checked_calibration(observations, np.float32)
        return dataclasses.replace(self, calibration=observations)

    def quantize(self, params: Any, network: MLP, version: int) -> PolicyPackage:
        if self.unsigned_activations and network.activation != "relu":
            # Unsigned codes only pay where a ReLU makes the rows non-negative.
            return dataclasses.replace(self, unsigned_activations=False).quantize(
                params, network, version)
        if self.calibration is None or getattr(network, "conv_layers", ()):
            return super().quantize(params, network, version)
        layers = mlp_layers(params)
        kernels = [np.asarray(kernel, np.float32) for kernel, _ in layers]
        biases = [np.asarray(bias, np.float32) for _, bias in layers]
        if self.calibration.ndim != 2 or self.calibration.shape[1] != kernels[0].shape[0]:
            raise ValueError(f"calibration observations have shape {self.calibration.shape}; "
                             f"the policy reads {kernels[0].shape[0]} features")
        inputs = self.calibration
        factors = None
        if self.smoothing:
            factors = smoothing_factors(inputs, kernels[0], self.alpha)
            kernels[0] = kernels[0] * factors[:, None]
            inputs = inputs / factors
        package = self.package_layers(list(zip(kernels, biases)), network, version)
        if self.bias_correction:
            rows = np.linspace(0, len(inputs) - 1, min(BIAS_CORRECTION_ROWS, len(inputs)))
            biases = corrected_biases(kernels, package, inputs[rows.astype(np.int64)])
            package = dataclasses.replace(package, layers=tuple(
                dataclasses.replace(layer, bias=bias)
                for layer, bias in zip(package.layers, biases)))
        return dataclasses.replace(package, input_smoothing=factors)


# The default: ``int8``, ``int4``, ... Activations keep signed codes: unsigned ones after ReLUs
# (``recipe_uact_int<b>``) agree more with fp32, but on AVX2 CPUs without VNNI they take slower
# kernels (docs/ptq.md, docs/performance.md).
register_quantizer("int", lambda bits: RecipeIntQuantizer(f"int{bits}", bits), parametric=True)
register_quantizer(
    "recipe_uact_int",
    lambda bits: RecipeIntQuantizer(f"recipe_uact_int{bits}", bits, unsigned_activations=True),
    parametric=True,
)
# Ablations, each without one ingredient.
register_quantizer(
    "nosmooth_int",
    lambda bits: RecipeIntQuantizer(f"nosmooth_int{bits}", bits, smoothing=False),
    parametric=True,
)
register_quantizer(
    "nobc_int",
    lambda bits: RecipeIntQuantizer(f"nobc_int{bits}", bits, bias_correction=False),
    parametric=True,
)
