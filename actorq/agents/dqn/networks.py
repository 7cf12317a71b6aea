"""DQN networks: the Q-network is the policy the actors run (greedy over its outputs)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from actorq.agents.dqn.config import DQNConfig
from actorq.networks import MLP, make_q_network
from actorq.quantization.qat import fake_quant_dot_general


@dataclasses.dataclass(frozen=True)
class DQNNetworks:
    q_network: MLP
    qat_q_network: MLP | None
    observation_size: int
    num_actions: int

    def init(self, key: jax.Array) -> dict:
        return self.q_network.init(key, jnp.zeros((1, self.observation_size), jnp.float32))


def make_networks(config: DQNConfig, observation_size: int, num_actions: int) -> DQNNetworks:
    """Builds the Q-network (and its fake-quantized twin when QAT is configured)."""
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
