"""The paper's networks: deterministic policy, distributional critic, Q-network."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from actorq.networks.mlp import MLP, DotGeneral
from actorq.networks.sizes import PAPER_CRITIC_SIZES, PAPER_POLICY_SIZES


def make_policy_network(
    action_size: int,
    hidden_sizes: Sequence[int] = PAPER_POLICY_SIZES,
    dot_general: DotGeneral | None = None,
    dot_general_cls: Callable[[], nn.Module] | None = None,
) -> MLP:
    """Deterministic continuous policy: observation -> action in [-1, 1] (tanh output)."""
    return MLP(
        hidden_sizes=tuple(hidden_sizes),
        output_size=action_size,
        activation="relu",
        output_activation="tanh",
        dot_general=dot_general,
        dot_general_cls=dot_general_cls,
    )


def make_q_network(
    num_actions: int,
    hidden_sizes: Sequence[int] = PAPER_POLICY_SIZES,
    dot_general: DotGeneral | None = None,
    dot_general_cls: Callable[[], nn.Module] | None = None,
) -> MLP:
    """DQN Q-network: observation -> one value per discrete action (the paper's policy MLP)."""
    return MLP(
        hidden_sizes=tuple(hidden_sizes),
        output_size=num_actions,
        activation="relu",
        output_activation="none",
        dot_general=dot_general,
        dot_general_cls=dot_general_cls,
    )


class DistributionalCritic(nn.Module):
    """D4PG critic: (observation, action) -> logits over ``num_atoms`` fixed return atoms.

    The critic always trains in full precision (only the actors' policy is quantized), so it
    has no dot_general hook of its own beyond the MLP's.
    """

    hidden_sizes: Sequence[int] = PAPER_CRITIC_SIZES
    num_atoms: int = 51
    v_min: float = -150.0
    v_max: float = 150.0

    def setup(self) -> None:
        self.torso = MLP(hidden_sizes=tuple(self.hidden_sizes), output_size=self.num_atoms)

    def __call__(self, observation: jax.Array, action: jax.Array) -> jax.Array:
        return self.torso(jnp.concatenate([observation, action], axis=-1))

    @property
    def atoms(self) -> jax.Array:
        """The support of the return distribution."""
        return jnp.linspace(self.v_min, self.v_max, self.num_atoms)
