"""Flax MLPs whose every dense layer takes an injectable ``dot_general``.

The injection point is how quantization reaches the networks: AQT (or any other quantizer)
supplies a replacement matmul and the network code stays unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

DotGeneral = Callable[..., jax.Array]

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "relu": nn.relu,
    "elu": nn.elu,
    "tanh": jnp.tanh,
    "none": lambda x: x,
}


def layer_name(index: int) -> str:
    """Name of the ``index``-th dense layer of an :class:`MLP` (stable across modules)."""
    return f"layer_{index}"


def hook_kwargs(kind: str, function: Callable | None,
                factory: Callable[[], nn.Module] | None) -> dict[str, Any]:
    """A Flax layer's quantization-hook arguments: ``{kind}_cls`` (a module factory, e.g. AQT's,
    which holds per-layer state) wins over the plain ``kind`` function; none when neither is
    given. ``kind``: ``"dot_general"`` (``nn.Dense``) or ``"conv_general_dilated"``
    (``nn.Conv``)."""
    if factory is not None:
        return {f"{kind}_cls": factory}
    if function is not None:
        return {kind: function}
    return {}


class MLP(nn.Module):
    """Dense stack ``in -> hidden_sizes... -> output_size``.

    Attributes:
      hidden_sizes: widths of the hidden layers.
      output_size: width of the final layer.
      activation: hidden activation name (see ``ACTIVATIONS``).
      output_activation: activation applied to the output ("tanh" for bounded actions).
      dot_general: one matmul used by every layer (``None`` = ``jax.lax.dot_general``).
      dot_general_cls: alternatively, a module factory called once per layer (AQT's Flax
        ``AqtDotGeneral``, which holds per-layer calibration state); wins over ``dot_general``.
    """

    hidden_sizes: Sequence[int]
    output_size: int
    activation: str = "relu"
    output_activation: str = "none"
    dot_general: DotGeneral | None = None
    dot_general_cls: Callable[[], nn.Module] | None = None
    kernel_init: Callable[..., Any] = nn.initializers.variance_scaling(
        1.0 / 3.0, "fan_in", "uniform"
    )

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        sizes = [*self.hidden_sizes, self.output_size]
        hooks = hook_kwargs("dot_general", self.dot_general, self.dot_general_cls)
        for i, size in enumerate(sizes):
            x = nn.Dense(size, name=layer_name(i), kernel_init=self.kernel_init, **hooks)(x)
            x = ACTIVATIONS[self.activation](x) if i < len(sizes) - 1 else x
        return ACTIVATIONS[self.output_activation](x)


def mlp_layers(params: Any) -> list[tuple[jax.Array, jax.Array]]:
    """Returns ``[(kernel, bias), ...]`` of an :class:`MLP`'s params in layer order.

    Accepts either the module's variables (``{'params': {...}}``) or its ``params`` collection.
    """
    tree = params.get("params", params)
    layers = []
    i = 0
    while layer_name(i) in tree:
        layer = tree[layer_name(i)]
        layers.append((layer["kernel"], layer["bias"]))
        i += 1
    if not layers:
        raise ValueError(f"no MLP layers found in params with keys {sorted(tree)}")
    return layers
