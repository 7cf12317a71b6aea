"""The on-policy agents' networks: a policy network (what actors run, quantized) and a value one.

Both are MLPs on flat observations, or conv networks (``config.torso``: the MinAtar or Nature
torso, each network with its own copy, as CleanRL's separate-network variants) on uint8 pixels.

Initialisation follows the reference implementations (CleanRL, SB3): orthogonal weights with
gain sqrt(2), the policy's output layer with gain 0.01 and the value's with gain 1, zero biases
(``orthogonal_init=False``: Flax's default, as the RL Zoo's tuned MuJoCo presets use).
A Gaussian policy's log-std is a state-independent parameter beside the MLP; a gSDE policy's is
a ``[features, actions]`` matrix, and the network the actors run (``deployed_policy``) appends
the last hidden features to the mean (:func:`deployed_params`).
"""

from __future__ import annotations

import dataclasses
import math

import flax.linen as nn
import jax
import jax.numpy as jnp

from actorq.agents.on_policy.config import OnPolicyConfig
from actorq.networks.conv import pixel_network, require_flat_observations
from actorq.networks.mlp import ACTIVATIONS, MLP, DotGeneral, layer_name, mlp_layers
from actorq.quantization.qat import fake_quant_dot_general


def _mlp(hidden: tuple[int, ...], output: int, activation: str, orthogonal: bool,
         dot_general: DotGeneral | None = None) -> MLP:
    init = {"kernel_init": nn.initializers.orthogonal(math.sqrt(2.0))} if orthogonal else {}
    return MLP(hidden_sizes=tuple(hidden), output_size=int(output), activation=activation,
               output_activation="none", dot_general=dot_general, **init)


def _rescale_output_layer(params: dict, gain: float, key: jax.Array) -> dict:
    num_layers = sum(1 for name in params["params"] if name.startswith("layer_"))
    name = layer_name(num_layers - 1)
    kernel = params["params"][name]["kernel"]
    new = nn.initializers.orthogonal(gain)(key, kernel.shape, kernel.dtype)
    inner = {**params["params"], name: {**params["params"][name], "kernel": new}}
    return {**params, "params": inner}


def mlp_features(params: dict, x: jax.Array, activation: str) -> jax.Array:
    """The last hidden features of an :class:`MLP` (its output layer's inputs), in fp32."""
    for kernel, bias in mlp_layers(params)[:-1]:
        x = ACTIVATIONS[activation](x @ kernel + bias)
    return x


def deployed_params(params: dict) -> dict:
    """A gSDE policy's params as the actors run them: the output layer ``[W | I]``, ``[b | 0]``,
    so the network outputs the mean and then, unchanged, the features it read."""
    layers = mlp_layers(params)
    kernel, bias = layers[-1]
    features = kernel.shape[0]
    name = layer_name(len(layers) - 1)
    last = {"kernel": jnp.concatenate([kernel, jnp.eye(features, dtype=kernel.dtype)], axis=1),
            "bias": jnp.concatenate([bias, jnp.zeros(features, bias.dtype)])}
    inner = {**params["params"], name: last}
    return {**params, "params": inner}


@dataclasses.dataclass(frozen=True)
class OnPolicyNetworks:
    """The modules; ``head`` is ``categorical`` (discrete actions), ``gaussian`` or ``gsde``.
    ``deployed_policy`` is the network the actors run: ``policy``, except that a gSDE one
    outputs its features too."""

    policy: nn.Module
    value: nn.Module
    qat_policy: nn.Module | None
    head: str
    observation_size: int
    action_size: int  # number of discrete actions, or the action dimension
    initial_log_std: float
    orthogonal_init: bool
    # (H, W, C) of uint8 pixel observations (conv torsos); None: flat float32 features.
    observation_shape: tuple[int, ...] | None = None
    deployed_policy: nn.Module | None = None

    def __post_init__(self) -> None:
        if self.deployed_policy is None:
            object.__setattr__(self, "deployed_policy", self.policy)

    @property
    def gsde_features(self) -> int:
        """The features a gSDE head's noise reads (0: no gSDE)."""
        if self.head != "gsde":
            return 0
        return int(self.deployed_policy.output_size) - self.action_size

    def init(self, key: jax.Array) -> dict:
        """Fresh params ``{"policy", "value"}``, plus ``"log_std"`` for a Gaussian head."""
        keys = jax.random.split(key, 4)
        if self.observation_shape is not None:
            obs = jnp.zeros((1, *self.observation_shape), jnp.uint8)
        else:
            obs = jnp.zeros((1, self.observation_size), jnp.float32)
        policy = self.policy.init(keys[0], obs)
        value = self.value.init(keys[1], obs)
        if self.orthogonal_init:
            policy = _rescale_output_layer(policy, 0.01, keys[2])
            value = _rescale_output_layer(value, 1.0, keys[3])
        params = {"policy": policy, "value": value}
        if self.head == "gaussian":
            params["log_std"] = jnp.full((self.action_size,), self.initial_log_std, jnp.float32)
        elif self.head == "gsde":
            params["log_std"] = jnp.full((self.gsde_features, self.action_size),
                                         self.initial_log_std, jnp.float32)
        return params


def make_networks(config: OnPolicyConfig, observation_size: int, action_size: int,
                  discrete: bool, observation_shape: tuple[int, ...] | None = None,
                  observation_scale: float = 1.0) -> OnPolicyNetworks:
    """The networks for an environment: logits over ``action_size`` actions when ``discrete``,
    else a Gaussian mean of dimension ``action_size``. ``observation_shape``/
    ``observation_scale``: pixel observations, for the conv torsos."""
    head = "categorical" if discrete else ("gsde" if config.gsde else "gaussian")
    if config.torso != "mlp":
        if config.normalize_observations:
            raise ValueError("learner.normalize_observations: pixel observations are scaled by "
                             "the network (codes x input scale), not normalized")
        init = ({"kernel_init": nn.initializers.orthogonal(math.sqrt(2.0))}
                if config.orthogonal_init else {})
        policy, value = (pixel_network(config.torso, size, observation_shape, observation_scale,
                                       qat_bits=config.qat_bits, **init)
                         for size in (action_size, 1))
        return OnPolicyNetworks(
            policy=policy, value=value, qat_policy=None, head=head,
            observation_size=int(observation_size), action_size=int(action_size),
            initial_log_std=float(config.initial_log_std),
            orthogonal_init=bool(config.orthogonal_init), observation_shape=policy.input_shape)
    require_flat_observations(observation_shape)
    qat = None
    if config.qat_bits is not None:
        qat = _mlp(config.hidden_sizes, action_size, config.activation, config.orthogonal_init,
                   fake_quant_dot_general(config.qat_bits))
    policy = _mlp(config.hidden_sizes, action_size, config.activation, config.orthogonal_init)
    deployed = None
    if head == "gsde":
        deployed = _mlp(config.hidden_sizes,
                        action_size + config.gsde_features(observation_size),
                        config.activation, config.orthogonal_init)
    return OnPolicyNetworks(
        policy=policy,
        deployed_policy=deployed,
        value=_mlp(config.value_hidden_sizes, 1, config.activation, config.orthogonal_init),
        qat_policy=qat,
        head=head,
        observation_size=int(observation_size),
        action_size=int(action_size),
        initial_log_std=float(config.initial_log_std),
        orthogonal_init=bool(config.orthogonal_init),
    )
