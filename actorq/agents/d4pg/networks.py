"""D4PG networks: a deterministic policy (what actors run, quantized), a distributional critic."""

from __future__ import annotations

import numpy as np

from actorq.agents.d4pg.config import D4PGConfig
from actorq.networks import DistributionalCritic, make_policy_network
from actorq.networks.actor_critic import ActorCriticNetworks
from actorq.quantization.qat import fake_quant_dot_general

D4PGNetworks = ActorCriticNetworks[DistributionalCritic]


def make_networks(config: D4PGConfig, observation_size: int, action_size: int) -> D4PGNetworks:
    """Builds the D4PG networks for an environment's observation/action sizes."""
    qat = None
    if config.qat_bits is not None:
        qat = make_policy_network(
            action_size,
            config.policy_hidden_sizes,
            dot_general=fake_quant_dot_general(config.qat_bits),
        )
    return D4PGNetworks(
        policy=make_policy_network(action_size, config.policy_hidden_sizes),
        critic=DistributionalCritic(
            hidden_sizes=tuple(config.critic_hidden_sizes),
            num_atoms=config.num_atoms,
            v_min=config.v_min,
            v_max=config.v_max,
        ),
        qat_policy=qat,
        observation_size=int(observation_size),
        action_size=int(action_size),
    )


def atoms(config: D4PGConfig) -> np.ndarray:
    """The critic's fixed return support."""
    return np.linspace(config.v_min, config.v_max, config.num_atoms, dtype=np.float32)
