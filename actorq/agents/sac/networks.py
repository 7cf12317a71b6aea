"""SAC networks: a tanh-Gaussian policy (one MLP, what actors run quantized) and twin Q critics."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from actorq.agents.sac.config import SACConfig
from actorq.networks.actor_critic import ActorCriticNetworks
from actorq.networks.mlp import MLP, DotGeneral
from actorq.quantization.qat import fake_quant_dot_general


class TwinCritic(nn.Module):
    """Two independent Q-networks: (observation, action) -> ``[..., 2]`` (Q1, Q2).

    Computes in the dtype of its parameters and inputs (fp16 params + fp16 inputs stay fp16).
    """

    hidden_sizes: Sequence[int]

    @nn.compact
    def __call__(self, observation: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([observation, action.astype(observation.dtype)], axis=-1)
        q1 = MLP(hidden_sizes=tuple(self.hidden_sizes), output_size=1, name="q1")(x)
        q2 = MLP(hidden_sizes=tuple(self.hidden_sizes), output_size=1, name="q2")(x)
        return jnp.concatenate([q1, q2], axis=-1)


def make_sac_policy_network(
    action_size: int, hidden_sizes: Sequence[int], dot_general: DotGeneral | None = None
) -> MLP:
    """The policy: observation -> ``[mean | log_std]`` (``2 * action_size``, no output activation).

    The squashing (``tanh``) and the log-std clipping happen outside the network, in the learner
    and in the actors, so that the quantizers package a plain :class:`MLP`.
    """
    return MLP(
        hidden_sizes=tuple(hidden_sizes),
        output_size=2 * int(action_size),
        activation="relu",
        output_activation="none",
        dot_general=dot_general,
    )


SACNetworks = ActorCriticNetworks[TwinCritic]


def make_networks(config: SACConfig, observation_size: int, action_size: int) -> SACNetworks:
    """Builds the SAC networks for an environment's observation/action sizes."""
    qat = None
    if config.qat_bits is not None:
        qat = make_sac_policy_network(
            action_size, config.policy_hidden_sizes, fake_quant_dot_general(config.qat_bits)
        )
    return SACNetworks(
        policy=make_sac_policy_network(action_size, config.policy_hidden_sizes),
        critic=TwinCritic(hidden_sizes=tuple(config.critic_hidden_sizes)),
        qat_policy=qat,
        observation_size=int(observation_size),
        action_size=int(action_size),
    )
