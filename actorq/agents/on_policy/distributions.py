"""The policy heads' densities in JAX (the learner's side of ``actorq.runtime.policy_head``).

``outputs`` are the policy MLP's outputs: logits for a categorical head, the mean for a Gaussian
head whose state-independent ``log_std`` is a separate parameter.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

_LOG_2PI = math.log(2.0 * math.pi)


def log_prob(head: str, outputs: jax.Array, actions: jax.Array,
             log_std: jax.Array | None = None) -> jax.Array:
    """``log pi(action | outputs)`` over the leading axes."""
    if head == "categorical":
        logp = jax.nn.log_softmax(outputs, axis=-1)
        return jnp.take_along_axis(logp, actions.astype(jnp.int32)[..., None], axis=-1)[..., 0]
    if head == "gaussian":
        z = (actions - outputs) * jnp.exp(-log_std)
        return jnp.sum(-0.5 * z**2 - log_std - 0.5 * _LOG_2PI, axis=-1)
    raise ValueError(f"unknown stochastic head {head!r}")


def entropy(head: str, outputs: jax.Array, log_std: jax.Array | None = None) -> jax.Array:
    """The head's entropy per row."""
    if head == "categorical":
        logp = jax.nn.log_softmax(outputs, axis=-1)
        return -jnp.sum(jnp.exp(logp) * logp, axis=-1)
    if head == "gaussian":
        per_dim = log_std + 0.5 * (1.0 + _LOG_2PI)
        return jnp.broadcast_to(jnp.sum(per_dim), outputs.shape[:-1])
    raise ValueError(f"unknown stochastic head {head!r}")
