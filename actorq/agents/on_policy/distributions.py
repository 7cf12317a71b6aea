"""The policy heads' densities in JAX (the learner's side of ``actorq.runtime.policy_head``).

``outputs`` are the policy MLP's outputs: logits for a categorical head, the mean for a Gaussian
head whose state-independent ``log_std`` is a separate parameter. A ``gsde`` head (generalized
state-dependent exploration, Raffin et al. 2022) is a Gaussian around the same mean whose
variance depends on the state through the policy's last hidden features ``z``:
``var_j = sum_i z_i^2 exp(log_std_ij)^2`` (``log_std`` is a ``[features, actions]`` matrix), the
distribution of ``mean + z @ E`` for a noise matrix ``E`` drawn with those standard deviations.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

_LOG_2PI = math.log(2.0 * math.pi)
# Added to a gSDE variance, as SB3 does, so that all-zero features still give a density.
GSDE_EPSILON = 1e-6


def gsde_variance(features: jax.Array, log_std: jax.Array) -> jax.Array:
    """Per-action variance of a gSDE head: ``features**2 @ exp(log_std)**2 + epsilon``."""
    return jnp.square(features) @ jnp.exp(2.0 * log_std) + GSDE_EPSILON


def log_prob(head: str, outputs: jax.Array, actions: jax.Array,
             log_std: jax.Array | None = None, features: jax.Array | None = None) -> jax.Array:
    """``log pi(action | outputs)`` over the leading axes (``features``: gSDE only)."""
    if head == "categorical":
        logp = jax.nn.log_softmax(outputs, axis=-1)
        return jnp.take_along_axis(logp, actions.astype(jnp.int32)[..., None], axis=-1)[..., 0]
    if head == "gaussian":
        z = (actions - outputs) * jnp.exp(-log_std)
        return jnp.sum(-0.5 * z**2 - log_std - 0.5 * _LOG_2PI, axis=-1)
    if head == "gsde":
        variance = gsde_variance(features, log_std)
        return jnp.sum(-0.5 * jnp.square(actions - outputs) / variance
                       - 0.5 * jnp.log(variance) - 0.5 * _LOG_2PI, axis=-1)
    raise ValueError(f"unknown stochastic head {head!r}")


def entropy(head: str, outputs: jax.Array, log_std: jax.Array | None = None,
            features: jax.Array | None = None) -> jax.Array:
    """The head's entropy per row."""
    if head == "categorical":
        logp = jax.nn.log_softmax(outputs, axis=-1)
        return -jnp.sum(jnp.exp(logp) * logp, axis=-1)
    if head == "gaussian":
        per_dim = log_std + 0.5 * (1.0 + _LOG_2PI)
        return jnp.broadcast_to(jnp.sum(per_dim), outputs.shape[:-1])
    if head == "gsde":
        variance = gsde_variance(features, log_std)
        return jnp.sum(0.5 * jnp.log(variance) + 0.5 * (1.0 + _LOG_2PI), axis=-1)
    raise ValueError(f"unknown stochastic head {head!r}")
