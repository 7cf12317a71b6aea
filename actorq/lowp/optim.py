"""hAdam, compound loss scaling and Kahan-compensated parameter updates, in pure low precision.

Every parameter, moment buffer, compensation buffer and the loss scale live in the parameters'
own dtype (fp16, bf16 or fp32); there are no fp32 master weights. Only hyper-parameter scalars
(``1 - b2``, bias corrections, the learning rate) are derived in fp32 and cast once, because
``1 - 0.999`` evaluated in fp16 is off by ~2x.

hAdam (Björck et al. 2021): Adam's second moment ``v`` holds squared gradients, which leave the
fp16 range at both ends (``(1e-4)**2`` underflows, ``300**2`` overflows). hAdam stores
``root_v = sqrt(v)`` instead and updates it as a hypotenuse,
``root_v <- hypot(sqrt(b2) * root_v, sqrt(1 - b2) * |g|)``, evaluated as
``hi * sqrt(1 + (lo / hi)**2)`` so nothing is squared outside ``[0, 1]``.

Compound loss scaling: the loss is multiplied by ``scale`` and the scaled gradients go straight
into the moments; ``mu``, ``root_v`` and ``eps * scale`` all carry the same factor, so
``mu / (root_v + eps * scale)`` does not depend on it and the gradients are never divided back.
When anything overflows the step is skipped, the scale halves and the stored moments are halved
with it; after ``increase_every`` clean steps the scale and moments double, unless doubling would
bring a buffer within ``margin`` of the dtype's largest value.

Kahan-gradients: ``p + lr * update`` loses updates smaller than half a unit in the last place of
``p`` (for fp16 ``p ~ 1`` that is ``4.9e-4``); a per-parameter compensation buffer keeps them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from actorq.lowp.polyak import kahan_add
from actorq.lowp.precision import LowpFixes

Params = Any
Schedule = Callable[[jax.Array], jax.Array]


class HAdamState(NamedTuple):
    """hAdam moments: ``root_v`` is the square root of Adam's second moment."""

    count: jax.Array  # int32: number of applied steps (bias correction)
    mu: Params
    root_v: Params


class NaiveAdamState(NamedTuple):
    """Textbook Adam moments, ``nu`` holding squared gradients in the parameter dtype."""

    count: jax.Array
    mu: Params
    nu: Params


Moments = HAdamState | NaiveAdamState


def _f32(x: float | jax.Array) -> jax.Array:
    return jnp.asarray(x, jnp.float32)


def _init_moments(params: Params, use_hadam: bool) -> Moments:
    cls = HAdamState if use_hadam else NaiveAdamState
    zeros = jax.tree.map(jnp.zeros_like, params)
    return cls(jnp.zeros((), jnp.int32), zeros, jax.tree.map(jnp.zeros_like, params))


def _hypot(a: jax.Array, b: jax.Array) -> jax.Array:
    """``sqrt(a**2 + b**2)`` for ``a, b >= 0`` without squaring anything larger than 1.

    Written as ``hi + hi * r**2 / (1 + sqrt(1 + r**2))`` with ``r = lo / hi``: forming ``1 + r**2``
    first would round away most of ``r**2`` in fp16.
    """
    hi = jnp.maximum(a, b)
    lo = jnp.minimum(a, b)
    r = lo / jnp.where(hi > 0, hi, jnp.ones_like(hi))
    r2 = r * r
    # The r2 > 0 guard keeps hypot(inf, finite) = inf (not inf * 0); NaN still propagates via hi.
    return hi + jnp.where(r2 > 0, hi * (r2 / (1 + jnp.sqrt(1 + r2))), jnp.zeros_like(hi))


def _hypot_ema(root_v: jax.Array, g: jax.Array, b2: float) -> jax.Array:
    """hAdam's ``hypot(sqrt(b2) * root_v, sqrt(1 - b2) * |g|)`` in ``root_v``'s dtype.

    Where ``root_v`` dominates (the usual case) it is evaluated as a relative step,
    ``root_v * sqrt(1 + d)`` with ``d = (1 - b2) * ((|g| / root_v)**2 - 1)``, added as
    ``root_v + root_v * d / (1 + sqrt(1 + d))``: one rounding of a small increment, the same
    accuracy as an exact hypot rounded once. ``|g| / root_v <= 1 / sqrt(1 - b2)`` there, so the
    square stays finite. Otherwise (first steps, gradient spikes) :func:`_hypot` is used.
    """
    dt = root_v.dtype
    c = _f32(1 - b2).astype(dt)
    g_term = _f32(np.sqrt(1 - b2)).astype(dt) * jnp.abs(g)
    relative = (root_v > 0) & (g_term <= root_v)
    q = jnp.abs(g) / jnp.where(relative, root_v, jnp.ones_like(root_v))
    d = c * (q * q - 1)
    stepped = root_v + root_v * (d / (1 + jnp.sqrt(1 + d)))
    return jnp.where(relative, stepped, _hypot(_f32(np.sqrt(b2)).astype(dt) * root_v, g_term))


def _update_moments(
    grads: Params, state: Moments, b1: float, b2: float, eps_scaled: jax.Array
) -> tuple[Params, Moments]:
    """One Adam/hAdam step: returns the direction ``m_hat / (sqrt(v_hat) + eps)`` and new moments.

    ``eps_scaled`` is ``eps * loss_scale`` as an fp32 scalar; it is cast per leaf.
    """
    use_hadam = isinstance(state, HAdamState)
    count = state.count + 1
    t = count.astype(jnp.float32)
    inv_bc1 = 1 / (1 - _f32(b1) ** t)
    inv_bc2 = 1 / (1 - _f32(b2) ** t)

    def mu_leaf(g, m):
        # m + (1 - b1) * (g - m), with the difference taken after scaling so it cannot overflow.
        c = _f32(1 - b1).astype(m.dtype)
        return m + (c * g.astype(m.dtype) - c * m)

    def second_leaf(g, s):
        g = g.astype(s.dtype)
        if use_hadam:
            return _hypot_ema(s, g, b2)
        return _f32(b2).astype(s.dtype) * s + _f32(1 - b2).astype(s.dtype) * (g * g)

    def direction_leaf(m, s):
        dt = m.dtype
        m_hat = m * inv_bc1.astype(dt)
        eps = eps_scaled.astype(dt)
        if use_hadam:
            denom = s * jnp.sqrt(inv_bc2).astype(dt) + eps
            # eps may round to 0 in fp16 (1e-8 does): a parameter whose gradients were all zero
            # gets a zero step, not 0/0.
            zero = denom == 0
            safe = jnp.where(zero, jnp.ones_like(denom), denom)
            return jnp.where(zero, jnp.zeros_like(m_hat), m_hat / safe)
        return m_hat / (jnp.sqrt(s * inv_bc2.astype(dt)) + eps)

    mu = jax.tree.map(mu_leaf, grads, state.mu)
    second = jax.tree.map(second_leaf, grads, state[2])
    direction = jax.tree.map(direction_leaf, mu, second)
    return direction, type(state)(count, mu, second)


def _rescale_moments(state: Moments, factor: jax.Array) -> Moments:
    """Multiplies the moments by the loss-scale ratio ``factor`` (``nu`` by its square)."""
    second_factor = factor if isinstance(state, HAdamState) else factor * factor

    def mul(f):
        return lambda x: x * f.astype(x.dtype)

    return type(state)(
        state.count,
        jax.tree.map(mul(factor), state.mu),
        jax.tree.map(mul(second_factor), state[2]),
    )


def _all_finite(*trees: Any) -> jax.Array:
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(trees)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.asarray(True)


def _scale_fits(state: Moments, factor: float, margin: float) -> jax.Array:
    """Whether every moment buffer times ``factor`` stays ``margin`` below its dtype's max."""
    second_factor = factor if isinstance(state, HAdamState) else factor * factor
    checks = [jnp.asarray(True)]
    for tree, f in ((state.mu, factor), (state[2], second_factor)):
        for x in jax.tree.leaves(tree):
            if x.size == 0:
                continue
            limit = float(jnp.finfo(x.dtype).max) / (f * margin)
            checks.append(jnp.max(jnp.abs(x)).astype(jnp.float32) <= limit)
    return jnp.all(jnp.stack(checks))


def _learning_rate(learning_rate: float | Schedule, count: jax.Array) -> jax.Array:
    return _f32(learning_rate(count) if callable(learning_rate) else learning_rate)


# --------------------------------------------------------------------------------------------
# optax-style pieces


def scale_by_lowp_adam(
    b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, *, use_hadam: bool = True
) -> optax.GradientTransformationExtraArgs:
    """Adam's direction ``m_hat / (sqrt(v_hat) + eps)`` with every buffer in the param dtype.

    ``use_hadam=True`` stores ``root_v`` (:class:`HAdamState`); ``False`` is textbook Adam storing
    squared gradients (:class:`NaiveAdamState`), which underflows in fp16 for gradients ~1e-4.
    Pass the extra argument ``loss_scale=`` when the incoming gradients are scaled: eps is then
    multiplied by it so the direction is scale-invariant.
    """

    def init_fn(params: Params) -> Moments:
        return _init_moments(params, use_hadam)

    def update_fn(updates, state, params=None, *, loss_scale=None, **extra_args):
        del params, extra_args
        scale = _f32(1.0) if loss_scale is None else _f32(loss_scale)
        return _update_moments(updates, state, b1, b2, eps * scale)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def scale_by_hadam(
    b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
) -> optax.GradientTransformationExtraArgs:
    """hAdam's direction (see :func:`scale_by_lowp_adam` with ``use_hadam=True``)."""
    return scale_by_lowp_adam(b1, b2, eps, use_hadam=True)


def scale_by_learning_rate_in_dtype(
    learning_rate: float | Schedule,
) -> optax.GradientTransformation:
    """Multiplies updates by ``-learning_rate`` cast to each leaf's dtype (no fp32 promotion)."""

    def init_fn(params: Params) -> optax.ScaleByScheduleState:
        del params
        return optax.ScaleByScheduleState(count=jnp.zeros((), jnp.int32))

    def update_fn(updates, state, params=None):
        del params
        lr = -_learning_rate(learning_rate, state.count)
        new = jax.tree.map(lambda u: lr.astype(u.dtype) * u, updates)
        return new, optax.ScaleByScheduleState(count=state.count + 1)

    return optax.GradientTransformation(init_fn, update_fn)


def hadam(
    learning_rate: float | Schedule,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
) -> optax.GradientTransformationExtraArgs:
    """hAdam: Adam that stores ``sqrt(v)`` and updates it as a hypotenuse.

    Works with parameters in any float dtype and keeps its state in that dtype. ``eps`` is cast to
    the parameter dtype (times ``loss_scale`` when that extra argument is given): in fp16 the
    default 1e-8 rounds to 0, which is harmless here because a zero denominator gives a zero
    step. If a non-zero eps is wanted in fp16 without loss scaling it must be at least ~6e-8
    (the smallest subnormal); with :func:`lowp_adam_update`'s loss scale of 1e4 the default is
    stored as 1e-4 and stays representable.
    """
    return optax.chain(scale_by_hadam(b1, b2, eps), scale_by_learning_rate_in_dtype(learning_rate))


def kahan_init(params: Params) -> Params:
    """Zero compensation buffers for :func:`kahan_apply_updates` (same dtypes as ``params``)."""
    return jax.tree.map(jnp.zeros_like, params)


def kahan_apply_updates(
    params: Params, updates: Params, compensation: Params
) -> tuple[Params, Params]:
    """``params + updates`` with Kahan compensation; returns ``(new_params, new_compensation)``.

    The Kahan-gradients drop-in for ``optax.apply_updates``.
    """
    updates = jax.tree.map(lambda u, p: u.astype(p.dtype), updates, params)
    return kahan_add(params, updates, compensation)


# --------------------------------------------------------------------------------------------
# functional API: hAdam + compound loss scaling + Kahan-gradients


@dataclasses.dataclass(frozen=True)
class LowpAdamConfig:
    """Settings of :func:`lowp_adam_update`. Hashable, so it can be a static jit argument.

    ``init_scale`` must be representable in the parameter dtype (fp16 max is 65504).
    ``increase_every`` is the number of consecutive clean steps before the scale doubles;
    ``margin`` (>= 1) is how far below the dtype max the doubled buffers must stay.
    """

    learning_rate: float | Schedule = 1e-4
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    loss_scaling: bool = True
    hadam: bool = True
    kahan_gradients: bool = True
    init_scale: float = 1e4
    increase_every: int = 10_000
    margin: float = 1.1

    def __post_init__(self) -> None:
        if not 0 <= self.b1 < 1 or not 0 <= self.b2 < 1:
            raise ValueError(f"b1 and b2 must be in [0, 1), got {self.b1}, {self.b2}")
        if self.eps < 0:
            raise ValueError(f"eps must be >= 0, got {self.eps}")
        if not self.init_scale > 0:
            raise ValueError(f"init_scale must be > 0, got {self.init_scale}")
        if int(self.increase_every) < 1:
            raise ValueError(f"increase_every must be >= 1, got {self.increase_every}")
        if not self.margin >= 1:
            raise ValueError(f"margin must be >= 1, got {self.margin}")

    @classmethod
    def from_fixes(cls, fixes: LowpFixes, **overrides: Any) -> LowpAdamConfig:
        """The optimizer-side fixes (hadam, loss_scaling, kahan_gradients) taken from ``fixes``."""
        return cls(
            hadam=fixes.hadam,
            loss_scaling=fixes.loss_scaling,
            kahan_gradients=fixes.kahan_gradients,
            **overrides,
        )


class LowpAdamState(NamedTuple):
    """State of :func:`lowp_adam_update`; every float leaf is in the parameter dtype."""

    moments: Moments  # HAdamState (hadam=True) or NaiveAdamState
    compensation: Params | None  # Kahan buffers, None when kahan_gradients=False
    loss_scale: jax.Array  # scalar; 1 when loss_scaling=False
    good_steps: jax.Array  # int32: consecutive clean steps since the last scale change


class LowpAdamInfo(NamedTuple):
    """What happened in one :func:`lowp_adam_update` call."""

    skipped: jax.Array  # bool: overflow, the step was not applied
    loss_scale: jax.Array  # the scale to multiply the *next* loss by


def _scale_dtype(params: Params) -> jnp.dtype:
    # The scale must be representable in every parameter dtype: take the narrowest range.
    dtypes = [x.dtype for x in jax.tree.leaves(params) if jnp.issubdtype(x.dtype, jnp.floating)]
    if not dtypes:
        return jnp.dtype(jnp.float32)
    return min(dtypes, key=lambda d: float(jnp.finfo(d).max))


def lowp_adam_init(params: Params, config: LowpAdamConfig) -> LowpAdamState:
    """Optimizer state for ``params`` (moments, Kahan buffers, loss scale) in the params' dtype."""
    dtype = _scale_dtype(params)
    scale = config.init_scale if config.loss_scaling else 1.0
    with np.errstate(over="ignore"):
        stored = np.asarray(scale, dtype=dtype)
    if not np.isfinite(stored) or stored <= 0:
        raise ValueError(f"init_scale {scale} is not representable in {dtype}")
    return LowpAdamState(
        moments=_init_moments(params, config.hadam),
        compensation=kahan_init(params) if config.kahan_gradients else None,
        loss_scale=jnp.asarray(stored, dtype),
        good_steps=jnp.zeros((), jnp.int32),
    )


def current_loss_scale(state: LowpAdamState) -> jax.Array:
    """The factor the loss must be multiplied by before differentiating."""
    return state.loss_scale


def lowp_adam_update(
    grads_scaled: Params,
    state: LowpAdamState,
    params: Params,
    config: LowpAdamConfig,
) -> tuple[Params, LowpAdamState, LowpAdamInfo]:
    """One optimizer step from gradients of ``loss * current_loss_scale(state)``.

    The gradients are not unscaled: the scale rides inside the moments and eps. With
    ``loss_scaling`` on, a non-finite value in the gradients or in the prospective moments skips
    the step (params, moments and Kahan buffers unchanged), halves the scale and halves the
    stored moments (``nu`` of plain Adam is quartered, it holds squares). After
    ``increase_every`` clean steps in a row the scale and moments double, unless that would bring
    a buffer or the scale within ``margin`` of the dtype max (then only the counter resets).
    With ``loss_scaling`` off nothing is checked and non-finite values propagate.

    Returns ``(new_params, new_state, info)``. Jittable with ``config`` static.
    """
    scale = state.loss_scale
    direction, moments = _update_moments(
        grads_scaled, state.moments, config.b1, config.b2, config.eps * _f32(scale)
    )
    lr = _learning_rate(config.learning_rate, state.moments.count)
    updates = jax.tree.map(lambda d: (-lr).astype(d.dtype) * d, direction)
    if config.kahan_gradients:
        new_params, compensation = kahan_apply_updates(params, updates, state.compensation)
    else:
        new_params = jax.tree.map(lambda p, u: p + u.astype(p.dtype), params, updates)
        compensation = None

    if not config.loss_scaling:
        new_state = LowpAdamState(moments, compensation, scale, state.good_steps)
        return new_params, new_state, LowpAdamInfo(jnp.asarray(False), scale)

    finite = _all_finite(grads_scaled, moments.mu, moments[2])
    finfo = jnp.finfo(scale.dtype)

    # Overflow: keep params, halve scale and stored moments (unless the scale would go subnormal).
    can_halve = _f32(scale) * 0.5 >= float(finfo.tiny)
    down = jnp.where(can_halve, _f32(0.5), _f32(1.0))
    skip_moments = _rescale_moments(state.moments, down)
    skip_scale = (_f32(scale) * down).astype(scale.dtype)

    # Clean step: maybe double.
    good_steps = state.good_steps + 1
    due = good_steps >= config.increase_every
    room = (_f32(scale) * 2 * config.margin <= float(finfo.max)) & _scale_fits(
        moments, 2.0, config.margin
    )
    up = jnp.where(due & room, _f32(2.0), _f32(1.0))
    keep_moments = _rescale_moments(moments, up)
    keep_scale = (_f32(scale) * up).astype(scale.dtype)

    def pick(a, b):
        return jax.tree.map(lambda x, y: jnp.where(finite, x, y), a, b)

    new_state = LowpAdamState(
        moments=pick(keep_moments, skip_moments),
        compensation=pick(compensation, state.compensation),
        loss_scale=jnp.where(finite, keep_scale, skip_scale),
        good_steps=jnp.where(finite & ~due, good_steps, 0).astype(jnp.int32),
    )
    new_params = pick(new_params, params)
    return new_params, new_state, LowpAdamInfo(~finite, new_state.loss_scale)


def value_and_scaled_grad(
    loss_fn: Callable[[Params], tuple[jax.Array, Any]], params: Params, scale: jax.Array
) -> tuple[jax.Array, Any, Params]:
    """``(loss, aux, d(loss * scale)/dparams)`` for ``loss_fn(params) -> (loss, aux)``: gradients
    of the scaled loss (compound loss scaling never divides them back), the loss unscaled."""

    def scaled(p: Params) -> tuple[jax.Array, tuple[jax.Array, Any]]:
        loss, aux = loss_fn(p)
        return loss * scale.astype(loss.dtype), (loss, aux)

    (_, (loss, aux)), grads = jax.value_and_grad(scaled, has_aux=True)(params)
    return loss, aux, grads


def flat_lowp_adam_update(
    grads: Params, opt_state: LowpAdamState, params: Params, config: LowpAdamConfig
) -> tuple[Params, LowpAdamState, LowpAdamInfo]:
    """:func:`lowp_adam_update` on the parameters raveled into one vector (elementwise, so the
    same arithmetic as per leaf); ``opt_state`` holds that vector's buffers
    (``lowp_adam_init(ravel_pytree(params)[0], config)``). One vector instead of a dozen leaves
    halves compile and run time for small networks."""
    from jax.flatten_util import ravel_pytree

    flat_params, unravel = ravel_pytree(params)
    flat_grads, _ = ravel_pytree(grads)
    new_flat, opt_state, info = lowp_adam_update(flat_grads, opt_state, flat_params, config)
    return unravel(new_flat), opt_state, info
