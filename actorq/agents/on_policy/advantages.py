"""Generalized advantage estimation over unrolls that cross episode boundaries.

rlax's ``truncated_generalized_advantage_estimation`` bootstraps step t from ``values[t+1]``,
the next step of the unroll; here an unroll runs on into the next episode, and a truncated
episode (a time limit) must bootstrap from its own final observation. So each step carries its
``next_value`` (the value of ``next_observation``), its env ``discount`` (0 at a termination) and
``last`` (the episode ended at this step), and the recursion is cut at every ``last`` and at
every zero discount inside an episode (an Atari life lost in training mode: the game goes on,
but no reward after it may count for the steps before it):

    delta_t = r_t + gamma * d_t * V(s'_t) - V(s_t)
    A_t     = delta_t + gamma * lambda * d_t * (1 - last_t) * A_{t+1},      A_T = 0
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def generalized_advantages(rewards: jax.Array, discounts: jax.Array, lasts: jax.Array,
                           values: jax.Array, next_values: jax.Array, gamma: float,
                           lambda_: float) -> jax.Array:
    """Advantages ``[..., T]`` for arrays of shape ``[..., T]`` (time on the last axis)."""
    deltas = rewards + gamma * discounts * next_values - values
    carry_weights = gamma * lambda_ * discounts * (1.0 - lasts)

    def backward(advantage, inputs):
        delta, weight = inputs
        advantage = delta + weight * advantage
        return advantage, advantage

    time_major = (jnp.moveaxis(deltas, -1, 0), jnp.moveaxis(carry_weights, -1, 0))
    _, advantages = jax.lax.scan(backward, jnp.zeros(deltas.shape[:-1], deltas.dtype),
                                 time_major, reverse=True)
    return jnp.moveaxis(advantages, 0, -1)
