"""Flax networks. Every dense layer takes an injectable ``dot_general`` (the quantization hook)."""

from actorq.lazy_exports import lazy_getattr
from actorq.networks.sizes import PAPER_CRITIC_SIZES, PAPER_POLICY_SIZES

# The Flax modules load on first use (PEP 562), so configs and actor processes that only need
# the sizes never import Flax or JAX.
_LAZY = {
    "DistributionalCritic": "actorq.networks.heads",
    "make_policy_network": "actorq.networks.heads",
    "make_q_network": "actorq.networks.heads",
    "ACTIVATIONS": "actorq.networks.mlp",
    "MLP": "actorq.networks.mlp",
    "layer_name": "actorq.networks.mlp",
    "mlp_layers": "actorq.networks.mlp",
}
__getattr__ = lazy_getattr(__name__, _LAZY)
__all__ = ["PAPER_CRITIC_SIZES", "PAPER_POLICY_SIZES", *sorted(_LAZY)]
