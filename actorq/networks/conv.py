"""Flax convolutional networks for pixel observations, with the MLPs' quantization hooks.

A :class:`ConvNet` reads integer-coded observations (uint8 frames, ``[batch, H, W, C]``), scales
them by ``input_scale`` (1/255 for Atari frames, 1 for MinAtar's 0/1 channels), runs ``VALID``
convolutions with ReLU, flattens (channels last, row-major: what every runtime reproduces) and
ends in a dense stack. Every conv layer takes an injectable ``conv_general_dilated`` and every
dense layer an injectable ``dot_general``, as :class:`~actorq.networks.mlp.MLP` does, so AQT or
fake quantization reach the network without changing it. Layers are named ``layer_<i>`` across
the conv and dense parts, so :func:`~actorq.networks.mlp.mlp_layers` lists them in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from actorq.networks.mlp import ACTIVATIONS, DotGeneral, hook_kwargs, layer_name
from actorq.networks.sizes import TORSOS as TORSO_NAMES
from actorq.networks.sizes import check_torso_fits

ConvGeneralDilated = Callable[..., jax.Array]
# (features, kernel size, stride) per conv layer; square kernels and strides.
ConvLayers = Sequence[tuple[int, int, int]]

# The Nature DQN torso (Mnih et al. 2015): 32 8x8/4, 64 4x4/2, 64 3x3/1, then 512 dense.
NATURE_CONV: tuple[tuple[int, int, int], ...] = ((32, 8, 4), (64, 4, 2), (64, 3, 1))
NATURE_HIDDEN: tuple[int, ...] = (512,)
# The MinAtar paper's network (Young & Tian 2019): one 16-channel 3x3/1 conv, then 128 dense.
MINATAR_CONV: tuple[tuple[int, int, int], ...] = ((16, 3, 1),)
MINATAR_HIDDEN: tuple[int, ...] = (128,)
# torso name -> (conv layers, hidden sizes of the dense part)
TORSOS: dict[str, tuple[tuple[tuple[int, int, int], ...], tuple[int, ...]]] = {
    "nature": (NATURE_CONV, NATURE_HIDDEN),
    "minatar": (MINATAR_CONV, MINATAR_HIDDEN),
}
assert set(TORSOS) == set(TORSO_NAMES) - {"mlp"}


def scan_without_loop(step: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any,
                      unrolled: bool) -> tuple[Any, Any]:
    """``jax.lax.scan(step, init, xs)``; with ``unrolled``, the same steps traced one after
    another with no loop at all. XLA:CPU runs convolutions inside a loop body several times
    slower than outside one, and ``lax.scan(..., unroll=True)`` still wraps the unrolled body
    in a one-trip loop (docs/pixels.md): the learners of conv networks use ``unrolled``."""
    if not unrolled:
        return jax.lax.scan(step, init, xs)
    length = jax.tree_util.tree_leaves(xs)[0].shape[0]
    carry, outputs = init, []
    for i in range(length):
        carry, out = step(carry, jax.tree_util.tree_map(lambda x, i=i: x[i], xs))
        outputs.append(out)
    return carry, jax.tree_util.tree_map(lambda *ys: jnp.stack(ys), *outputs)


class ConvNet(nn.Module):
    """``VALID`` conv layers with ReLU -> flatten -> dense ``hidden_sizes`` -> ``output_size``.

    Attributes:
      conv_layers: ``(features, kernel, stride)`` per conv layer.
      hidden_sizes: widths of the dense hidden layers after the flatten.
      output_size: width of the final layer.
      input_shape: ``(H, W, C)`` of the observations (recorded in the policy package).
      input_scale: observations (integer codes) are multiplied by it first.
      activation: hidden activation (conv and dense); output_activation: applied last.
      dot_general / dot_general_cls: the dense layers' matmul hook (as :class:`MLP`).
      conv_general_dilated / conv_general_dilated_cls: the conv layers' hook.
    """

    conv_layers: ConvLayers
    hidden_sizes: Sequence[int]
    output_size: int
    input_shape: tuple[int, int, int] | None = None
    input_scale: float = 1.0 / 255.0
    activation: str = "relu"
    output_activation: str = "none"
    dot_general: DotGeneral | None = None
    dot_general_cls: Callable[[], nn.Module] | None = None
    conv_general_dilated: ConvGeneralDilated | None = None
    conv_general_dilated_cls: Callable[[], nn.Module] | None = None
    kernel_init: Callable[..., Any] = nn.initializers.variance_scaling(
        1.0 / 3.0, "fan_in", "uniform"
    )

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        """``[..., H, W, C]`` observations -> ``[..., output_size]`` (any leading axes, e.g. the
        learner's ``[batch, time]``)."""
        leading = x.shape[:-3]
        x = x.reshape((-1, *x.shape[-3:])).astype(jnp.float32) * jnp.float32(self.input_scale)
        conv_hooks = hook_kwargs("conv_general_dilated", self.conv_general_dilated,
                                 self.conv_general_dilated_cls)
        for i, (features, kernel, stride) in enumerate(self.conv_layers):
            x = nn.Conv(int(features), (int(kernel), int(kernel)), strides=int(stride),
                        padding="VALID", name=layer_name(i), kernel_init=self.kernel_init,
                        **conv_hooks)(x)
            x = ACTIVATIONS[self.activation](x)
        x = x.reshape((x.shape[0], -1))
        sizes = [*self.hidden_sizes, self.output_size]
        first = len(self.conv_layers)
        dense_hooks = hook_kwargs("dot_general", self.dot_general, self.dot_general_cls)
        for j, size in enumerate(sizes):
            x = nn.Dense(int(size), name=layer_name(first + j), kernel_init=self.kernel_init,
                         **dense_hooks)(x)
            x = ACTIVATIONS[self.activation](x) if j < len(sizes) - 1 else x
        return ACTIVATIONS[self.output_activation](x).reshape((*leading, -1))


def conv_output_shape(input_shape: Sequence[int], conv_layers: ConvLayers) -> tuple[int, ...]:
    """``(H, W, C)`` after the ``VALID`` conv layers; raises ValueError if an image is too small
    for them."""
    height, width, channels = (int(v) for v in input_shape)
    for features, kernel, stride in conv_layers:
        if height < kernel or width < kernel:
            raise ValueError(f"observations of shape {tuple(input_shape)} are too small for "
                             f"a {kernel}x{kernel} convolution")
        height = (height - kernel) // stride + 1
        width = (width - kernel) // stride + 1
        channels = int(features)
    return height, width, channels


def make_torso_network(torso: str, output_size: int, input_shape: Sequence[int],
                       input_scale: float, output_activation: str = "none",
                       **hooks: Any) -> ConvNet:
    """The named torso (:data:`TORSOS`) for ``input_shape`` observations with an
    ``output_size`` head; ``hooks`` are the quantization hooks (``dot_general``,
    ``conv_general_dilated`` and their ``_cls`` forms). Raises ValueError for an unknown torso
    or an image too small for it."""
    if torso not in TORSOS:
        raise ValueError(f"unknown conv torso {torso!r}; valid: {', '.join(sorted(TORSOS))}")
    conv, hidden = TORSOS[torso]
    conv_output_shape(input_shape, conv)
    return ConvNet(conv_layers=conv, hidden_sizes=hidden, output_size=int(output_size),
                   input_shape=tuple(int(v) for v in input_shape),
                   input_scale=float(input_scale), output_activation=output_activation,
                   **hooks)


def require_flat_observations(observation_shape: Sequence[int] | None) -> None:
    """Raises ValueError (naming ``learner.torso``) if an MLP torso is asked to read pixels."""
    check_torso_fits("mlp", None if observation_shape is None else tuple(observation_shape))


def pixel_network(torso: str, output_size: int, observation_shape: Sequence[int] | None,
                  observation_scale: float, qat_bits: int | None = None,
                  **kwargs: Any) -> ConvNet:
    """An agent's conv network for pixel observations: :func:`make_torso_network` (``kwargs``
    go to :class:`ConvNet`), with errors that name the config fields (flat observations, QAT,
    which conv networks do not have yet)."""
    check_torso_fits(torso, None if observation_shape is None else tuple(observation_shape))
    if qat_bits is not None:
        raise ValueError("learner.qat_bits: quantization-aware training covers MLP policies "
                         f"only, not the {torso!r} conv torso")
    return make_torso_network(torso, output_size, observation_shape, observation_scale,
                              **kwargs)
