"""Kahan-compensated summation and the Kahan-momentum target-network (Polyak) update.

A soft update ``target += tau * (online - target)`` adds an increment that is tiny next to the
target. In fp16 the spacing of numbers near 1.0 is 2**-10 ~= 9.8e-4, so an increment below half of
that (e.g. ``0.005 * 0.05``) rounds away entirely and the target never moves. Kahan summation keeps
the rounding error of every addition in a compensation buffer (same dtype as the target) and feeds
it back into the next addition, so the small increments accumulate.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def _kahan_leaf(value: jax.Array, increment: jax.Array, comp: jax.Array):
    # ``comp`` holds (rounded sum - exact sum) of past additions; subtract it before adding.
    y = increment - comp
    total = value + y
    new_comp = (total - value) - y
    return total, new_comp


def kahan_add(value: Any, increment: Any, compensation: Any) -> tuple[Any, Any]:
    """Compensated ``value + increment`` over matching pytrees.

    Returns ``(new_value, new_compensation)``. Every leaf is computed in its own dtype, so an
    fp16 tree stays fp16. ``compensation`` starts as zeros like ``value``.
    """
    pairs = jax.tree.map(_kahan_leaf, value, increment, compensation)
    new_value = jax.tree.map(lambda _, p: p[0], value, pairs)
    new_comp = jax.tree.map(lambda _, p: p[1], value, pairs)
    return new_value, new_comp


def _increment(target: jax.Array, online: jax.Array, tau: float | jax.Array) -> jax.Array:
    online = online.astype(target.dtype)
    return jnp.asarray(tau, jnp.float32).astype(target.dtype) * (online - target)


def polyak_update(
    target: Any,
    online: Any,
    tau: float | jax.Array,
    compensation: Any | None = None,
) -> tuple[Any, Any]:
    """Kahan-compensated soft update ``target <- target + tau * (online - target)``.

    Args:
      target: target-network pytree (any float dtype; every leaf stays in its dtype).
      online: online-network pytree with the same structure.
      tau: the soft-update rate, e.g. 0.005.
      compensation: the buffer returned by the previous call, or ``None`` on the first call
        (zeros are used).

    Returns:
      ``(new_target, new_compensation)``; keep the compensation next to the target and pass it
      back on the next call.
    """
    if compensation is None:
        compensation = jax.tree.map(jnp.zeros_like, target)
    increments = jax.tree.map(lambda t, o: _increment(t, o, tau), target, online)
    return kahan_add(target, increments, compensation)


def naive_polyak_update(target: Any, online: Any, tau: float | jax.Array) -> Any:
    """Plain soft update ``target + tau * (online - target)`` in the target's dtype."""
    return jax.tree.map(lambda t, o: t + _increment(t, o, tau), target, online)
