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
publish, with empty replay) the package is plain round-to-nearest. Packages stay ordinary integer
packages: every runtime runs them unchanged (the smoothing divides in fp32, like the normalizer).

Conv (pixel) policies read uint8 frames exactly and need neither step. With 8-bit calibration
frames they get **static codes** instead: each convolution's ReLU output is requantized to
unsigned 8-bit codes with a fixed scale, the fp32 network's maximum of that activation over the
calibration frames / 255 (:func:`static_code_scales`; ONNX Runtime's MinMax calibration). That is
what ONNX's ``QLinearConv`` computes, the int8 convolution that ONNX Runtime runs fast, where the
per-sample dynamic scale of round-to-nearest needs the slow ``ConvInteger`` path
(docs/performance.md). Activations above the calibrated maximum clip at code 255.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from actorq.networks.mlp import MLP, mlp_layers
from actorq.quantization.base import checked_calibration
from actorq.quantization.builtin import IntQuantizer
from actorq.quantization.float_head import with_float_output_layer
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
# Calibration frames whose fp32 activations set the static code scales of conv policies (the
# Nature CNN's fp32 forward pass costs ~1 ms a frame on a CPU core; the publish pays it).
CODE_SCALE_ROWS = 32


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


def static_code_scales(float_layers: list[tuple[Any, Any]], strides: list[tuple[int, int]],
                       frames: np.ndarray, input_scale: float) -> list[np.float32]:
    """The static code scale of each convolution's ReLU output: its maximum over ``frames`` in
    the fp32 network, / 255 (1 / 255 where it is never positive).

    Args:
      float_layers: the float ``(kernel, bias)`` pairs, convolutions first.
      strides: the convolutions' strides, one per conv layer.
      frames: ``[n, H, W, C]`` pixel codes (any numeric dtype).
      input_scale: what one code is worth.
    Returns one scale per conv layer: the ``input_code_scale`` of the layer after it.
    """
    import jax.numpy as jnp

    from actorq.quantization.numerics import CODE_MAX
    from actorq.quantization.reference import float_layer

    x = jnp.asarray(np.asarray(frames, np.float32) * np.float32(input_scale))
    scales = []
    for (kernel, bias), conv_strides in zip(float_layers, strides):
        layer = {"kernel": jnp.asarray(kernel, jnp.float32), "bias": jnp.asarray(bias)}
        x = jnp.maximum(float_layer(x, layer, conv_strides), 0.0)
        peak = float(jnp.max(x))
        scales.append(np.float32((peak if peak > 0 else 1.0) / CODE_MAX))
    return scales


@dataclasses.dataclass(frozen=True)
class RecipeIntQuantizer(IntQuantizer):
    """:class:`IntQuantizer` with input smoothing and bias correction (see the module docstring).

    ``calibration``: ``[n, features]`` first-layer inputs; None gives round-to-nearest.
    """

    alpha: float = SMOOTHING_ALPHA
    smoothing: bool = True
    bias_correction: bool = True
    # Keep the output layer fp32 (``for_action_values``; ``recipe_fp32head_int<b>`` always): for
    # a greedy DQN head whose action gaps are far below the Q-values' size, the int8 output
    # layer's rounding picks the action.
    float_head: bool = False
    calibration: np.ndarray | None = dataclasses.field(default=None, compare=False, repr=False)

    def with_calibration(self, observations: np.ndarray) -> RecipeIntQuantizer:
        """This quantizer, calibrated on ``observations`` ``[n, features]`` (the first layer's
        inputs: normalized where the package has a normalizer), or on pixel codes ``[n, H, W,
        C]`` for conv policies (their static code scales)."""
        observations = checked_calibration(observations, np.float32)
        return dataclasses.replace(self, calibration=observations)

    def for_action_values(self) -> RecipeIntQuantizer:
        """This quantizer for a policy whose outputs are action values and whose action is their
        argmax (DQN): the output layer stays fp32, and bias correction still removes the mean
        shift of the integer layers below it. Q-values' gaps are small beside their size, so an
        int8 output layer's rounding would decide which action wins (docs/ptq.md). The layer is
        the network's smallest (hidden x actions)."""
        return dataclasses.replace(self, float_head=True)

    def quantize(self, params: Any, network: MLP, version: int) -> PolicyPackage:
        if self.unsigned_activations and network.activation != "relu":
            # Unsigned codes only pay where a ReLU makes the rows non-negative.
            return dataclasses.replace(self, unsigned_activations=False).quantize(
                params, network, version)
        if getattr(network, "conv_layers", ()):
            package = self._quantize_conv(params, network, version)
            return with_float_output_layer(package, *mlp_layers(params)[-1]) \
                if self.float_head else package
        if self.calibration is None:
            package = super().quantize(params, network, version)
            return with_float_output_layer(package, *mlp_layers(params)[-1]) \
                if self.float_head else package
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
        if self.float_head:
            # kernels[-1] carries the smoothing when the head is also the first layer.
            package = with_float_output_layer(package, kernels[-1], biases[-1])
        if self.bias_correction:
            rows = np.linspace(0, len(inputs) - 1, min(BIAS_CORRECTION_ROWS, len(inputs)))
            biases = corrected_biases(kernels, package, inputs[rows.astype(np.int64)])
            package = dataclasses.replace(package, layers=tuple(
                dataclasses.replace(layer, bias=bias)
                for layer, bias in zip(package.layers, biases)))
        return dataclasses.replace(package, input_smoothing=factors)

    def _quantize_conv(self, params: Any, network: MLP, version: int) -> PolicyPackage:
        """Round-to-nearest kernels; with calibration frames and 8 bits, static codes between
        the integer convolutions and into the first dense layer (the module docstring)."""
        package = super().quantize(params, network, version)
        if self.calibration is None or self.bits != 8 or self.unsigned_activations:
            return package
        frames = self.calibration
        if frames.shape[1:] != package.input_shape:
            raise ValueError(f"calibration frames have shape {frames.shape[1:]}; the policy "
                             f"reads {package.input_shape}")
        rows = np.linspace(0, len(frames) - 1, min(CODE_SCALE_ROWS, len(frames)))
        convs = len(network.conv_layers)
        scales = static_code_scales(
            mlp_layers(params)[:convs], [package.layers[i].strides for i in range(convs)],
            frames[rows.astype(np.int64)], package.input_scale)
        layers = list(package.layers)
        for i, scale in enumerate(scales, start=1):
            layers[i] = dataclasses.replace(layers[i], input_code_scale=np.array([scale]))
        return dataclasses.replace(package, layers=tuple(layers))


# The default: ``int8``, ``int4``, ... Activations keep signed codes: unsigned ones after ReLUs
# (``recipe_uact_int<b>``) agree more with fp32, but on AVX2 CPUs without VNNI they take slower
# kernels (docs/ptq.md, docs/performance.md).
register_quantizer("int", lambda bits: RecipeIntQuantizer(f"int{bits}", bits), parametric=True)
register_quantizer(
    "recipe_uact_int",
    lambda bits: RecipeIntQuantizer(f"recipe_uact_int{bits}", bits, unsigned_activations=True),
    parametric=True,
)
register_quantizer(
    "recipe_fp32head_int",
    lambda bits: RecipeIntQuantizer(f"recipe_fp32head_int{bits}", bits, float_head=True),
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
