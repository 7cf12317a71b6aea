"""DDPG networks: the deterministic tanh policy (what actors run, quantized) and a Q critic."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from actorq.agents.ddpg.config import DDPGConfig
from actorq.networks import MLP, make_policy_network
from actorq.networks.actor_critic import ActorCriticNetworks
from actorq.quantization.qat import fake_quant_dot_general


class QCritic(nn.Module):
    """(observation, action) -> Q, one MLP on their concatenation.

    With ``layer_norm`` every hidden layer is dense -> LayerNorm -> ReLU, as OpenAI Baselines'
    DDPG (QuaRL's) builds its critic. The policy, which the package describes, stays a plain
    dense stack.
    """

    hidden_sizes: tuple[int, ...]
    layer_norm: bool = False

    @nn.compact
    def __call__(self, observation: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([observation, action], axis=-1)
        if not self.layer_norm:
            return MLP(hidden_sizes=self.hidden_sizes, output_size=1, name="q")(x)[..., 0]
        init = MLP.kernel_init
        for i, size in enumerate(self.hidden_sizes):
            x = nn.Dense(size, kernel_init=init, name=f"dense_{i}")(x)
            x = nn.relu(nn.LayerNorm(name=f"norm_{i}")(x))
        return nn.Dense(1, kernel_init=init, name="q_out")(x)[..., 0]


DDPGNetworks = ActorCriticNetworks[QCritic]


def make_networks(config: DDPGConfig, observation_size: int, action_size: int) -> DDPGNetworks:
    qat = None
    if config.qat_bits is not None:
        qat = make_policy_network(action_size, config.policy_hidden_sizes,
                                  dot_general=fake_quant_dot_general(config.qat_bits))
    return DDPGNetworks(
        policy=make_policy_network(action_size, config.policy_hidden_sizes),
        critic=QCritic(hidden_sizes=tuple(config.critic_hidden_sizes),
                       layer_norm=config.critic_layer_norm),
        qat_policy=qat,
        observation_size=int(observation_size),
        action_size=int(action_size),
    )
