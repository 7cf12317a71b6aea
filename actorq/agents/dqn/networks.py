"""DQN networks: the Q-network is the policy the actors run (greedy over its outputs)."""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp

from actorq.agents.dqn.config import DQNConfig
from actorq.networks import make_q_network
from actorq.networks.conv import pixel_network, require_flat_observations
from actorq.quantization.qat import fake_quant_dot_general


@dataclasses.dataclass(frozen=True)
class DQNNetworks:
    q_network: nn.Module
    qat_q_network: nn.Module | None
    observation_size: int
    num_actions: int
    # (H, W, C) of uint8 pixel observations (conv torsos); None: flat float32 features.
    observation_shape: tuple[int, ...] | None = None

    def init(self, key: jax.Array) -> dict:
        if self.observation_shape is not None:
            return self.q_network.init(key, jnp.zeros((1, *self.observation_shape), jnp.uint8))
        return self.q_network.init(key, jnp.zeros((1, self.observation_size), jnp.float32))


def make_networks(config: DQNConfig, observation_size: int, num_actions: int,
                  observation_shape: tuple[int, ...] | None = None,
                  observation_scale: float = 1.0) -> DQNNetworks:
    """Builds the Q-network (and its fake-quantized twin when QAT is configured).

    ``observation_shape``/``observation_scale``: the observations' shape and what one integer
    code is worth, for the conv torsos (``config.torso``) on pixel tasks."""
    if config.torso != "mlp":
        network = pixel_network(config.torso, num_actions, observation_shape, observation_scale,
                                qat_bits=config.qat_bits)
        return DQNNetworks(q_network=network, qat_q_network=None,
                           observation_size=int(observation_size), num_actions=int(num_actions),
                           observation_shape=network.input_shape)
    require_flat_observations(observation_shape)
    qat = None
    if config.qat_bits is not None:
        qat = make_q_network(
            num_actions, config.hidden_sizes, dot_general=fake_quant_dot_general(config.qat_bits)
        )
    return DQNNetworks(
        q_network=make_q_network(num_actions, config.hidden_sizes),
        qat_q_network=qat,
        observation_size=int(observation_size),
        num_actions=int(num_actions),
    )
