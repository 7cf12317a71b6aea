"""Flax networks. Every dense layer takes an injectable ``dot_general`` (the quantization hook)."""

from actorq.networks.heads import (
    PAPER_CRITIC_SIZES,
    PAPER_POLICY_SIZES,
    DistributionalCritic,
    make_policy_network,
    make_q_network,
)
from actorq.networks.mlp import ACTIVATIONS, MLP, layer_name, mlp_layers

__all__ = [
    "ACTIVATIONS",
    "MLP",
    "PAPER_CRITIC_SIZES",
    "PAPER_POLICY_SIZES",
    "DistributionalCritic",
    "layer_name",
    "make_policy_network",
    "make_q_network",
    "mlp_layers",
]
