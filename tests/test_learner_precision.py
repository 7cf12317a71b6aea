"""``learner.precision`` for DQN and D4PG: pure fp16/bf16 training with Björck et al.'s fixes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

PRESETS = {"dqn": ("configs.dqn_actorq", "cartpole_small"),
           "d4pg": ("configs.d4pg_actorq", "cartpole_balance_cpu")}


def make_learner(agent: str, precision: str, fixes: str = "all", **learner):
    import importlib

    from launchpad_programs import nodes

    module, preset = PRESETS[agent]
    config = importlib.import_module(module).get_config(preset)
    config.learner.precision = precision
    config.learner.lowp_fixes = fixes
    config.learner.update(learner)
    builder = nodes.make_builder_for(config)
    signature = builder.replay_signature()
    rng = np.random.default_rng(0)
    n, m = builder.config.sgd_steps_per_call, builder.config.batch_size

    def batches():
        while True:
            batch = {}
            for field, spec in signature.items():
                if np.issubdtype(spec.dtype, np.floating):
                    batch[field] = rng.standard_normal((n, m, *spec.shape)).astype(spec.dtype)
                else:
                    batch[field] = rng.integers(0, 2, (n, m, *spec.shape)).astype(spec.dtype)
            batch["discount"] = np.full((n, m), 0.97, np.float32)
            if agent == "d4pg":
                batch["action"] = np.clip(batch["action"], -1, 1)
            yield batch

    return builder.make_learner(batches(), seed=0)


def float_dtypes(tree) -> set:
    return {x.dtype for x in jax.tree.leaves(tree) if jnp.issubdtype(x.dtype, jnp.floating)}


def losses(metrics: dict) -> np.ndarray:
    return np.array([v for k, v in sorted(metrics.items()) if k.endswith("loss")])


@pytest.mark.parametrize("agent", ["dqn", "d4pg"])
@pytest.mark.parametrize("precision, dtype", [("fp16", jnp.float16), ("bf16", jnp.bfloat16)])
def test_low_precision_learner_trains_in_its_dtype_and_tracks_fp32(agent, precision, dtype):
    reference, learner = make_learner(agent, "fp32"), make_learner(agent, precision)
    for _ in range(10):
        expected, metrics = reference.step(), learner.step()
    # Parameters, targets and optimizer state all live in the low dtype (not mixed precision)...
    assert float_dtypes(learner.state()) == {jnp.dtype(dtype)}
    assert float_dtypes(reference.state()) == {jnp.dtype(jnp.float32)}
    # ...while the published policy is float32 for the quantizers.
    assert float_dtypes(learner.policy_params()) == {jnp.dtype(jnp.float32)}
    # Same data, same seed: after 10 steps the losses agree to the dtype's precision (fp16 has
    # 11 significant bits, bf16 8; D4PG's policy loss is ~0.01, hence the absolute term).
    got, want = losses(metrics), losses(expected)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=0.05 if precision == "bf16" else 0.01, atol=5e-4)
    assert metrics["loss_scale"] > 1


@pytest.mark.parametrize("agent", ["dqn", "d4pg"])
def test_naive_fp16_fails_where_the_fixes_hold(agent):
    # Textbook Adam in fp16: squared gradients underflow to 0 and eps (1e-8) is 0 in fp16, so
    # the first update divides by zero. The fixes keep the same learner finite. (Textbook eps
    # explicitly: the DQN CartPole preset's 3.125e-4 is representable in fp16.)
    textbook = {"adam_epsilon": 1e-8} if agent == "dqn" else {}  # D4PG's Adam always has 1e-8
    naive = make_learner(agent, "fp16", fixes="none", **textbook)
    fixed = make_learner(agent, "fp16", fixes="all", **textbook)
    for _ in range(5):
        naive_metrics, fixed_metrics = naive.step(), fixed.step()
    assert not np.all(np.isfinite(losses(naive_metrics)))
    assert np.all(np.isfinite(losses(fixed_metrics)))


def test_unknown_precision_or_fix_is_rejected():
    from actorq.agents.d4pg.config import D4PGConfig
    from actorq.agents.dqn.config import DQNConfig

    with pytest.raises(ValueError, match="unknown precision 'fp8'"):
        DQNConfig(precision="fp8")
    with pytest.raises(ValueError, match="unknown fix"):
        D4PGConfig(precision="fp16", lowp_fixes="hadam,warp_drive")
    # Only the optimizer-side fixes act on DQN and D4PG; fp32 uses none.
    assert DQNConfig(precision="fp16").fix_names == ("hadam", "loss_scaling", "kahan_gradients")
    assert D4PGConfig(precision="fp32").fix_names == ()
