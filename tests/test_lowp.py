"""The six fp16 fixes of Björck et al. 2021: each fails without the fix and works with it."""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import actorq.lowp as lowp
from actorq.lowp import LowpAdamConfig, LowpFixes

F16 = jnp.float16


def _jit_update(config: LowpAdamConfig):
    return jax.jit(functools.partial(lowp.lowp_adam_update, config=config))


def _float_dtypes(tree) -> set:
    return {x.dtype for x in jax.tree.leaves(tree) if jnp.issubdtype(x.dtype, jnp.floating)}


# --- 1. hAdam ---------------------------------------------------------------------------------


def _fp32_adam_updates(grad: float, steps: int, lr: float) -> np.ndarray:
    opt = optax.adam(lr, eps=1e-8)
    p = jnp.zeros(4, jnp.float32)
    state = opt.init(p)
    out = []
    for _ in range(steps):
        u, state = opt.update(jnp.full(4, grad, jnp.float32), state, p)
        out.append(float(u[0]))
    return np.array(out)


def _fp16_updates(config: LowpAdamConfig, grad: float, steps: int):
    update = _jit_update(config)
    p = jnp.zeros(4, F16)
    state = lowp.lowp_adam_init(p, config)
    out = []
    for _ in range(steps):
        new_p, state, _ = update(jnp.full(4, grad, F16), state, p)
        out.append(float(new_p[0]) - float(p[0]))
        p = new_p
    return np.array(out), state


@pytest.mark.parametrize("grad", [1e-4, 1000.0])
def test_hadam_second_moment_stays_in_range_where_adam_under_or_overflows(grad):
    """1e-4**2 underflows fp16 (Adam divides by 0); 1000**2 overflows (Adam divides by inf)."""
    lr, steps = 1e-3, 20
    ref = _fp32_adam_updates(grad, steps, lr)
    common = dict(learning_rate=lr, loss_scaling=False, kahan_gradients=False)

    naive, naive_state = _fp16_updates(LowpAdamConfig(hadam=False, **common), grad, steps)
    nu = np.asarray(naive_state.moments.nu, np.float64)
    if grad < 1:
        assert np.all(nu == 0.0)  # (1e-4)**2 = 1e-8 is below fp16's smallest subnormal
        assert not np.isfinite(naive).any()  # m / 0: -inf, then NaN once the param is inf
    else:
        assert np.all(np.isinf(nu))
        assert np.all(naive == 0.0)  # m / inf: the parameter never moves

    fixed, state = _fp16_updates(LowpAdamConfig(hadam=True, **common), grad, steps)
    np.testing.assert_allclose(fixed, ref, rtol=0.02)
    np.testing.assert_allclose(
        np.asarray(state.moments.root_v, np.float64),
        abs(grad) * math.sqrt(1 - 0.999**steps),
        rtol=0.02,
    )
    assert _float_dtypes(state) == {jnp.dtype(F16)}


def test_hadam_optax_transformation_matches_fp32_adam():
    tx = lowp.hadam(1e-3)
    p = jnp.zeros(3, F16)
    state = tx.init(p)
    g = jnp.full(3, 1e-4, F16)
    update = jax.jit(tx.update)
    for _ in range(10):
        u, state = update(g, state, p)
    assert u.dtype == F16 and _float_dtypes(state) == {jnp.dtype(F16)}
    np.testing.assert_allclose(
        np.asarray(u, np.float64), _fp32_adam_updates(1e-4, 10, 1e-3)[-1], rtol=0.02
    )
    # A parameter that never had a gradient: eps=1e-8 rounds to 0 in fp16, the step must be 0.
    u0, _ = tx.update(jnp.zeros(3, F16), tx.init(p), p)
    assert np.all(np.asarray(u0) == 0)


# --- 2. compound loss scaling -----------------------------------------------------------------


def _scaled(g, state) -> jax.Array:
    return (
        jnp.asarray(g, jnp.float32) * lowp.current_loss_scale(state).astype(jnp.float32)
    ).astype(F16)


def test_loss_scale_skips_halves_and_rescales_on_overflow_then_doubles():
    config = LowpAdamConfig(learning_rate=1e-2, increase_every=3)
    update = _jit_update(config)
    p = jnp.array([1.0, -2.0], F16)
    state = lowp.lowp_adam_init(p, config)
    assert float(lowp.current_loss_scale(state)) == 1e4
    g = np.array([0.5, -0.25])
    for _ in range(2):
        p, state, info = update(_scaled(g, state), state, p)
        assert not bool(info.skipped)
    assert int(state.good_steps) == 2

    for bad in (np.inf, np.nan):
        before = state
        new_p, state, info = update(jnp.array([bad, 1.0], F16), state, p)
        assert bool(info.skipped)
        np.testing.assert_array_equal(new_p, p)  # params untouched
        assert float(info.loss_scale) == float(before.loss_scale) / 2
        np.testing.assert_array_equal(state.moments.mu, before.moments.mu / 2)
        np.testing.assert_array_equal(state.moments.root_v, before.moments.root_v / 2)
        np.testing.assert_array_equal(state.compensation, before.compensation)
        assert int(state.moments.count) == int(before.moments.count) == 2
        assert int(state.good_steps) == 0
    assert float(state.loss_scale) == 2500.0

    # The step after the overflow equals the step the unscaled optimizer would take: the moments
    # were rescaled consistently with the new scale.
    ref_cfg = dataclasses.replace(config, loss_scaling=False)
    ref_state = lowp.lowp_adam_init(p, ref_cfg)._replace(
        moments=state.moments._replace(
            mu=state.moments.mu / state.loss_scale, root_v=state.moments.root_v / state.loss_scale
        ),
        compensation=state.compensation,
    )
    ref_p, _, _ = _jit_update(ref_cfg)(jnp.asarray(g, F16), ref_state, p)
    new_p, state, info = update(_scaled(g, state), state, p)
    np.testing.assert_allclose(
        np.asarray(new_p, np.float32), np.asarray(ref_p, np.float32), atol=2e-3
    )
    p = new_p

    # Three clean steps in a row (the one above and two more) double the scale and the buffers.
    no_double = dataclasses.replace(config, increase_every=10**9)
    p, state, info = update(_scaled(g, state), state, p)
    assert float(info.loss_scale) == 2500.0 and int(state.good_steps) == 2
    p_nd, state_nd, _ = _jit_update(no_double)(_scaled(g, state), state, p)
    p, state, info = update(_scaled(g, state), state, p)
    assert not bool(info.skipped) and float(info.loss_scale) == 5000.0
    np.testing.assert_array_equal(p, p_nd)
    np.testing.assert_array_equal(state.moments.mu, state_nd.moments.mu * 2)
    np.testing.assert_array_equal(state.moments.root_v, state_nd.moments.root_v * 2)
    assert int(state.good_steps) == 0
    assert _float_dtypes(state) == {jnp.dtype(F16)}


def test_loss_scale_detects_prospective_moment_overflow():
    """A finite gradient of 1000 (scaled) squares to 1e6 > 65504: plain Adam's nu overflows."""
    config = LowpAdamConfig(learning_rate=1e-2, hadam=False, init_scale=1024.0)
    update = _jit_update(config)
    p = jnp.array([1.0, -2.0], F16)
    state = lowp.lowp_adam_init(p, config)
    p, state, info = update(jnp.array([1.0, -2.0], F16), state, p)
    assert not bool(info.skipped)
    before = state
    new_p, state, info = update(jnp.array([1000.0, 1.0], F16), state, p)
    assert bool(info.skipped) and float(info.loss_scale) == 512.0
    np.testing.assert_array_equal(new_p, p)
    np.testing.assert_array_equal(state.moments.mu, before.moments.mu / 2)
    np.testing.assert_array_equal(state.moments.nu, before.moments.nu / 4)  # nu holds squares

    # hAdam keeps sqrt(v): the same gradient is in range and the step is taken.
    h_config = dataclasses.replace(config, hadam=True)
    h_state = lowp.lowp_adam_init(p, h_config)
    h_p, h_state, h_info = _jit_update(h_config)(jnp.array([1000.0, 1.0], F16), h_state, p)
    assert not bool(h_info.skipped) and np.all(np.isfinite(np.asarray(h_p, np.float32)))


def test_loss_scale_increase_is_refused_near_the_dtype_max():
    p = jnp.array([1.0, -2.0], F16)
    g = jnp.array([0.5, -0.25], F16)
    # The scale itself: 4e4 * 2 * 1.1 > 65504.
    config = LowpAdamConfig(init_scale=4e4, increase_every=1)
    state = lowp.lowp_adam_init(p, config)
    _, state, info = _jit_update(config)(g * 1000, state, p)
    assert not bool(info.skipped) and float(info.loss_scale) == 4e4
    assert int(state.good_steps) == 0
    # A moment buffer: mu = 4e4 would double past 65504 / 1.1; 2e4 would not.
    config = LowpAdamConfig(init_scale=1.0, increase_every=1)
    state = lowp.lowp_adam_init(p, config)
    for mu, expected in ((4e4, 1.0), (2e4, 2.0)):
        s = state._replace(moments=state.moments._replace(mu=jnp.array([mu, 0.0], F16)))
        _, s, info = _jit_update(config)(g, s, p)
        assert not bool(info.skipped) and float(info.loss_scale) == expected
        assert np.all(np.isfinite(np.asarray(s.moments.mu, np.float32)))


def test_without_loss_scaling_overflow_propagates():
    config = LowpAdamConfig(loss_scaling=False)
    p = jnp.array([1.0, -2.0], F16)
    state = lowp.lowp_adam_init(p, config)
    assert float(lowp.current_loss_scale(state)) == 1.0
    new_p, state, info = _jit_update(config)(jnp.array([np.inf, 1.0], F16), state, p)
    assert not bool(info.skipped) and float(info.loss_scale) == 1.0
    assert not np.isfinite(np.asarray(new_p, np.float32)[0])


# --- 3. softplus-fix --------------------------------------------------------------------------


def test_tanh_log_det_softplus_fix():
    u = jnp.array([[-20.0, 20.0, 0.5], [-3.0, 7.0, -0.25]], F16)
    u64 = np.asarray(u, np.float64)
    # Exact log(1 - tanh(u)^2) = log 4 - 2|u| - 2 log1p(exp(-2|u|)).
    exact = math.log(4) - 2 * np.abs(u64) - 2 * np.log1p(np.exp(-2 * np.abs(u64)))

    @jax.jit
    def evaluate(u):
        return {
            "naive": lowp.naive_tanh_log_det_jacobian(u, axis=None),
            "fixed": lowp.tanh_log_det_jacobian(u, axis=None),
            "summed": lowp.tanh_log_det_jacobian(u),
            "grad": jax.grad(lambda v: lowp.tanh_log_det_jacobian(v).sum())(u),
            "naive_grad": jax.grad(lambda v: lowp.naive_tanh_log_det_jacobian(v).sum())(u),
        }

    out = jax.tree.map(lambda x: np.asarray(x, np.float64), evaluate(u))
    assert evaluate(u)["fixed"].dtype == F16
    naive = out["naive"]
    assert naive[0, 0] == -np.inf and naive[0, 1] == -np.inf and naive[1, 1] == -np.inf
    np.testing.assert_allclose(out["fixed"], exact, rtol=2e-3, atol=2e-3)
    assert out["summed"].shape == (2,)
    np.testing.assert_allclose(out["summed"], exact.sum(-1), rtol=3e-3)

    # Backward pass: d/du = -2 tanh(u); the naive one is NaN at saturation.
    np.testing.assert_allclose(out["grad"], -2 * np.tanh(u64), atol=5e-3)
    assert not np.isfinite(out["naive_grad"][0, 0])


# --- 4. normal-fix ----------------------------------------------------------------------------


def _gauss64(x, mean, log_std) -> float:
    x, mean, log_std = (np.float64(np.asarray(a, np.float16)) for a in (x, mean, log_std))
    return float(-0.5 * ((x - mean) / np.exp(log_std)) ** 2 - log_std - 0.5 * np.log(2 * np.pi))


@pytest.mark.parametrize(
    ("x", "mean", "log_std", "naive_kind"),
    [
        (0.501, 0.5, -9.0, "-inf"),  # sigma**2 = 1.5e-8 underflows to 0
        (300.0, 0.0, 6.0, "nan"),  # (x - mean)**2 = 9e4 overflows, and so does 2 sigma**2
        (0.3, 0.1, -1.0, "ok"),  # the benign case: both agree
    ],
)
def test_gaussian_log_prob_normal_fix(x, mean, log_std, naive_kind):
    args = [jnp.array([v], F16) for v in (x, mean, log_std)]
    ref = _gauss64(x, mean, log_std)
    naive = float(lowp.naive_gaussian_log_prob(*args)[()])
    fixed = lowp.gaussian_log_prob(*args)
    assert fixed.dtype == F16 and fixed.shape == ()
    assert float(fixed) == pytest.approx(ref, rel=5e-3)
    if naive_kind == "-inf":
        assert naive == -np.inf
    elif naive_kind == "nan":
        assert np.isnan(naive)
    else:
        assert naive == pytest.approx(ref, rel=5e-3)
    grads = jax.grad(lambda m, s: lowp.gaussian_log_prob(args[0], m, s).sum(), argnums=(0, 1))(
        args[1], args[2]
    )
    assert all(np.all(np.isfinite(np.asarray(g, np.float32))) for g in grads)


# --- 5. Kahan-momentum ------------------------------------------------------------------------


def _polyak_run(online: float, steps: int, tau: float = 0.005):
    target0 = jnp.ones(3, F16)
    online_t = jnp.full(3, online, F16)

    @jax.jit
    def run():
        naive = jax.lax.fori_loop(
            0, steps, lambda _, t: lowp.naive_polyak_update(t, online_t, tau), target0
        )
        kahan, comp = jax.lax.fori_loop(
            0,
            steps,
            lambda _, tc: lowp.polyak_update(tc[0], online_t, tau, tc[1]),
            lowp.polyak_update(target0, online_t, 0.0),
        )
        return naive, kahan, comp

    naive, kahan, comp = run()
    assert naive.dtype == kahan.dtype == comp.dtype == F16
    on = float(np.float16(online))
    exact = on + (1.0 - on) * (1 - tau) ** steps
    return float(naive[0]), float(kahan[0]), exact


def test_polyak_update_kahan_momentum():
    # An increment of 0.005 * 0.05 = 2.5e-4 is below half an fp16 ulp at 1.0 (4.9e-4): lost.
    naive, kahan, exact = _polyak_run(1.05, 100)
    assert naive == 1.0  # not a single step landed
    assert exact == pytest.approx(1.0197, abs=1e-4)
    assert kahan == pytest.approx(exact, abs=2e-3)

    # Toward 1.1 the first few steps round up to the next ulp (9.8e-4), then the naive target
    # freezes. How many land (2 or 3) depends on whether XLA rounds tau * (online - target) to
    # fp16 before the add or fuses it in f32: CPUs with native fp16 arithmetic (AVX512-FP16) and
    # those without differ, so the bound is a few ulps, not one value.
    naive100, _, _ = _polyak_run(1.1, 100)
    naive, kahan, exact = _polyak_run(1.1, 1000)
    assert naive == naive100  # frozen: 900 more steps moved nothing
    assert 1.0 < naive <= 1.0 + 4 * 2.0**-10
    assert abs(naive - exact) > 0.09
    assert kahan == pytest.approx(exact, abs=2e-3)  # about 2 fp16 ulps


# --- 6. Kahan-gradients -----------------------------------------------------------------------


def test_kahan_gradients_accumulate_tiny_updates():
    steps, lr = 1000, 1e-4
    opt = optax.adam(lr)

    def fp32_body(_, carry):
        p, s = carry
        u, s = opt.update(-jnp.ones(2, jnp.float32), s, p)
        return optax.apply_updates(p, u), s

    p32 = jnp.ones(2, jnp.float32)
    p32, _ = jax.jit(lambda p: jax.lax.fori_loop(0, steps, fp32_body, (p, opt.init(p))))(p32)
    exact = float(p32[0])
    assert exact == pytest.approx(1.1, abs=1e-3)

    finals = {}
    for kahan in (False, True):
        config = LowpAdamConfig(learning_rate=lr, loss_scaling=False, kahan_gradients=kahan)

        @jax.jit
        def run(config=config):
            p = jnp.ones(2, F16)
            state = lowp.lowp_adam_init(p, config)

            def body(_, carry):
                p, state = carry
                p, state, _ = lowp.lowp_adam_update(-jnp.ones(2, F16), state, p, config)
                return p, state

            return jax.lax.fori_loop(0, steps, body, (p, state))

        p, state = run()
        assert p.dtype == F16 and _float_dtypes(state) == {jnp.dtype(F16)}
        finals[kahan] = float(p[0])
    assert finals[False] == 1.0  # 1 + 1e-4 rounds back to 1 every time
    assert finals[True] == pytest.approx(exact, abs=2e-3)

    # The optax-style drop-in for optax.apply_updates.
    p, c = jnp.ones(2, F16), lowp.kahan_init(jnp.ones(2, F16))
    for _ in range(100):
        p, c = lowp.kahan_apply_updates(p, jnp.full(2, 1e-4, F16), c)
    assert float(p[0]) == pytest.approx(1.01, abs=1e-3)


# --- end to end -------------------------------------------------------------------------------


@pytest.mark.parametrize(("precision", "tol"), [("fp16", 1e-2), ("bf16", 2e-2), ("fp32", 1e-2)])
def test_end_to_end_quadratic_pure_low_precision(precision, tol):
    dtype = lowp.dtype_of(precision)
    curvature = {"w": jnp.array([1.0, 10.0, 0.1, 100.0]), "b": jnp.array([3.0])}
    optimum = {"w": jnp.array([0.5, -1.0, 2.0, 0.01]), "b": jnp.array([-1.5])}
    curvature, optimum = lowp.cast_tree(curvature, dtype), lowp.cast_tree(optimum, dtype)
    params = lowp.cast_tree({"w": jnp.zeros(4), "b": jnp.zeros(1)}, dtype)

    def loss(p):
        terms = jax.tree.map(lambda a, x, o: 0.5 * jnp.sum(a * (x - o) ** 2), curvature, p, optimum)
        return sum(jax.tree.leaves(terms))

    config = LowpAdamConfig.from_fixes(LowpFixes.all_on(), learning_rate=1e-2, increase_every=50)

    @jax.jit
    def train(params):
        state = lowp.lowp_adam_init(params, config)

        def step(carry, _):
            p, s = carry
            scale = lowp.current_loss_scale(s)
            g = jax.grad(lambda q: loss(q) * scale)(p)
            p, s, info = lowp.lowp_adam_update(g, s, p, config)
            return (p, s), info

        (p, s), infos = jax.lax.scan(step, (params, state), None, length=600)
        return p, s, infos

    p, state, infos = train(params)
    assert _float_dtypes((p, state)) == {jnp.dtype(dtype)}
    assert lowp.current_loss_scale(state).dtype == dtype
    for leaf, target in zip(jax.tree.leaves(p), jax.tree.leaves(optimum)):
        np.testing.assert_allclose(
            np.asarray(leaf, np.float32), np.asarray(target, np.float32), atol=tol
        )
    assert float(loss(p)) < 1e-4
    if precision == "fp16":
        # The backward pass of 0.5 * a * (x - o)**2 * scale carries 0.5 * 100 * scale, which
        # overflows fp16 at 1e4, 5e3 and 2.5e3: the first three steps are skipped, and each later
        # attempt to double back to 2.5e3 is skipped again.
        skipped = np.asarray(infos.skipped)
        assert skipped[:3].all() and not skipped[3:50].any()
        assert float(lowp.current_loss_scale(state)) == 1250.0
        assert 2500.0 in np.asarray(infos.loss_scale, np.float32)


# --- helpers ----------------------------------------------------------------------------------


def test_precision_helpers_and_fix_names():
    assert lowp.PRECISIONS == ("fp32", "fp16", "bf16")
    assert lowp.dtype_of("fp16") == jnp.float16 and lowp.dtype_of("bf16") == jnp.bfloat16
    with pytest.raises(ValueError, match="fp32, fp16, bf16"):
        lowp.dtype_of("fp8")

    tree = {"w": jnp.ones((2, 3)), "n": jnp.arange(3), "flag": True, "h": np.ones(2, np.float64)}
    cast = lowp.cast_tree(tree, "fp16")
    assert cast["w"].dtype == F16 and cast["h"].dtype == F16
    assert cast["n"].dtype == tree["n"].dtype and cast["flag"] is True
    assert lowp.tree_bytes(cast) == 6 * 2 + 3 * tree["n"].dtype.itemsize + 2 * 2
    assert lowp.tree_bytes(lowp.cast_tree(tree, jnp.float32)) == 6 * 4 + 3 * 4 + 2 * 4

    assert LowpFixes.from_names("hadam,loss_scaling") == LowpFixes(hadam=True, loss_scaling=True)
    assert LowpFixes.from_names(["hAdam", "Kahan-momentum"]).names() == ("hadam", "kahan_momentum")
    assert LowpFixes.from_names("all") == LowpFixes.all_on()
    assert LowpFixes.from_names("none") == LowpFixes.from_names("") == LowpFixes.all_off()
    assert len(LowpFixes.all_on().names()) == 6
    with pytest.raises(ValueError, match=r"unknown fix name.*'adam'.*valid names"):
        LowpFixes.from_names("hadam,adam")
    with pytest.raises(ValueError, match="alone"):
        LowpFixes.from_names("all,hadam")

    with pytest.raises(ValueError, match="not representable"):
        lowp.lowp_adam_init(jnp.ones(2, F16), LowpAdamConfig(init_scale=1e5))
    with pytest.raises(ValueError, match="margin"):
        LowpAdamConfig(margin=0.5)
    with pytest.raises(ValueError, match="increase_every"):
        LowpAdamConfig(increase_every=0)
