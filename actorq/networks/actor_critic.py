"""The modules of an actor-critic agent (D4PG, DDPG, SAC): a policy, its critic and the policy's
QAT variant, with one initializer for both parameter sets."""

from __future__ import annotations

import dataclasses
from typing import Generic, TypeVar

import flax.linen as nn
import jax
import jax.numpy as jnp

from actorq.networks.mlp import MLP

Critic = TypeVar("Critic", bound=nn.Module)


@dataclasses.dataclass(frozen=True)
class ActorCriticNetworks(Generic[Critic]):
    """The policy (what actors run, quantized), the critic ``(observation, action) -> value``
    and the QAT variant of the policy (same params, fake-quantized matmuls; None without QAT)."""

    policy: MLP
    critic: Critic
    qat_policy: MLP | None
    observation_size: int
    action_size: int

    def init(self, key: jax.Array) -> tuple[dict, dict]:
        """Fresh float32 ``(policy_params, critic_params)``."""
        policy_key, critic_key = jax.random.split(key)
        obs = jnp.zeros((1, self.observation_size), jnp.float32)
        act = jnp.zeros((1, self.action_size), jnp.float32)
        return self.policy.init(policy_key, obs), self.critic.init(critic_key, obs, act)
