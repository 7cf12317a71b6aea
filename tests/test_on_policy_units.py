"""Exact unit tests of the on-policy pieces (PPO/A2C): GAE, the clipped surrogate, the actors'
policy heads against the learner's densities, the replay queue, the unroll adder and reward
scaling, and the policy package's head/normalizer fields.

Every expected value is computed by hand (or by an independent closed form) from tiny inputs; no
learning runs. The whole file runs in a few seconds on CPU.
"""

from __future__ import annotations

import dataclasses
import math

import dm_env
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from actorq.agents.on_policy import distributions
from actorq.agents.on_policy.acting import REWARD_CLIP, RewardScalingAdder
from actorq.agents.on_policy.advantages import generalized_advantages
from actorq.agents.on_policy.learning import Objective, surrogate_loss
from actorq.agents.on_policy.networks import deployed_params, make_networks, mlp_features
from actorq.agents.ppo.config import PPOConfig
from actorq.networks.mlp import layer_name
from actorq.quantization import make_quantizer
from actorq.quantization import package as package_module
from actorq.quantization.package import (
    FORMAT_VERSION,
    OBSERVATION_CLIP,
    DenseParams,
    PackageError,
    PolicyPackage,
)
from actorq.replay.adders import UnrollAdder
from actorq.replay.errors import RateLimiterTimeout
from actorq.replay.rate_limiters import Queue, rate_limiter_from_config
from actorq.replay.samplers import Fifo
from actorq.replay.specs import ArraySpec
from actorq.replay.table import queue_table
from actorq.runtime import policy_head
from actorq.runtime.policy_runtime import make_policy_runtime

# =============================================================================== 1. GAE

GAMMA, LAMBDA = 0.9, 0.8
REWARDS = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
VALUES = np.array([0.5, 1.0, 1.5, 2.0], np.float32)
# next_values[t] == values[t+1] inside one episode; the last bootstraps from V(s_4) = 2.5.
NEXT_VALUES = np.array([1.0, 1.5, 2.0, 2.5], np.float32)
ONES = np.ones(4, np.float32)
ZEROS = np.zeros(4, np.float32)


# Jitted with gamma and lambda traced: one compile per shape (eager op-by-op dispatch costs
# seconds of compiles on a busy CPU).
_generalized_advantages = jax.jit(generalized_advantages)


def _gae(rewards, discounts, lasts, values, next_values, gamma=GAMMA, lambda_=LAMBDA):
    return np.asarray(_generalized_advantages(
        jnp.asarray(rewards, jnp.float32), jnp.asarray(discounts, jnp.float32),
        jnp.asarray(lasts, jnp.float32), jnp.asarray(values, jnp.float32),
        jnp.asarray(next_values, jnp.float32), gamma, lambda_))


def test_gae_no_episode_end_hand_expanded():
    # delta_t = r_t + 0.9 * V(s'_t) - V(s_t)
    #   = [1 + 0.9*1.0 - 0.5, 2 + 0.9*1.5 - 1.0, 3 + 0.9*2.0 - 1.5, 4 + 0.9*2.5 - 2.0]
    #   = [1.4, 2.35, 3.3, 4.25];  gamma * lambda = 0.72
    # A3 = 4.25
    # A2 = 3.3  + 0.72 * 4.25   = 6.36
    # A1 = 2.35 + 0.72 * 6.36   = 6.9292
    # A0 = 1.4  + 0.72 * 6.9292 = 6.389024
    expected = np.array([6.389024, 6.9292, 6.36, 4.25])
    got = _gae(REWARDS, ONES, ZEROS, VALUES, NEXT_VALUES)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
    # The same as the fully expanded sum A_t = sum_k (gamma lambda)^k delta_{t+k}.
    deltas = np.array([1.4, 2.35, 3.3, 4.25])
    expanded = [sum(0.72**k * deltas[t + k] for k in range(4 - t)) for t in range(4)]
    np.testing.assert_allclose(got, expanded, rtol=0, atol=1e-5)


def test_gae_termination_cuts_recursion_and_bootstrap():
    # Termination at t=1 (discount 0, last 1); t=2,3 are a new episode. next_values[1] is the
    # value of the terminal observation: whatever it is (here 100), it must not count.
    next_values = np.array([1.0, 100.0, 2.0, 2.5], np.float32)
    discounts = np.array([1, 0, 1, 1], np.float32)
    lasts = np.array([0, 1, 0, 0], np.float32)
    # delta_1 = 2 + 0.9 * 0 * 100 - 1.0 = 1.0;   A1 = 1.0 (recursion cut: A2 does not leak in)
    # A0 = 1.4 + 0.72 * 1.0 = 2.12;   A2, A3 as without an episode end (6.36, 4.25)
    expected = np.array([2.12, 1.0, 6.36, 4.25])
    np.testing.assert_allclose(_gae(REWARDS, discounts, lasts, VALUES, next_values),
                               expected, rtol=0, atol=1e-5)


def test_gae_truncation_bootstraps_from_own_next_value_but_cuts_recursion():
    # Truncation at t=1 (discount 1, last 1): bootstrap from V(final obs of episode) = 5.0,
    # not from values[2] (the next episode's first state).
    next_values = np.array([1.0, 5.0, 2.0, 2.5], np.float32)
    lasts = np.array([0, 1, 0, 0], np.float32)
    # delta_1 = 2 + 0.9 * 5.0 - 1.0 = 5.5;  A1 = 5.5;  A0 = 1.4 + 0.72 * 5.5 = 5.36
    expected = np.array([5.36, 5.5, 6.36, 4.25])
    np.testing.assert_allclose(_gae(REWARDS, ONES, lasts, VALUES, next_values),
                               expected, rtol=0, atol=1e-5)


def test_gae_lambda_one_is_n_step_return_minus_value():
    # The A2C case: lambda = 1 gives the bootstrapped n-step return minus the value.
    # G3 = 4 + 0.9 * 2.5    = 6.25
    # G2 = 3 + 0.9 * 6.25   = 8.625
    # G1 = 2 + 0.9 * 8.625  = 9.7625
    # G0 = 1 + 0.9 * 9.7625 = 9.78625
    expected = np.array([9.78625 - 0.5, 9.7625 - 1.0, 8.625 - 1.5, 6.25 - 2.0])
    np.testing.assert_allclose(_gae(REWARDS, ONES, ZEROS, VALUES, NEXT_VALUES, lambda_=1.0),
                               expected, rtol=0, atol=1e-5)
    # With a termination at t=1: G1 = 2, G0 = 1 + 0.9 * 2 = 2.8; t=2,3 unchanged.
    discounts = np.array([1, 0, 1, 1], np.float32)
    lasts = np.array([0, 1, 0, 0], np.float32)
    expected = np.array([2.8 - 0.5, 2.0 - 1.0, 8.625 - 1.5, 6.25 - 2.0])
    np.testing.assert_allclose(
        _gae(REWARDS, discounts, lasts, VALUES, NEXT_VALUES, lambda_=1.0),
        expected, rtol=0, atol=1e-5)


def test_gae_batch_axes_match_each_row():
    rows = [
        (REWARDS, ONES, ZEROS, VALUES, NEXT_VALUES),
        (REWARDS, np.array([1, 0, 1, 1.0]), np.array([0, 1, 0, 0.0]), VALUES,
         np.array([1.0, 100.0, 2.0, 2.5])),
        (REWARDS[::-1], ONES, np.array([0, 1, 0, 0.0]), VALUES, np.array([1.0, 5.0, 2.0, 2.5])),
    ]
    stacked = [np.stack([np.asarray(r[i], np.float32) for r in rows]) for i in range(5)]
    batched = _gae(*stacked)
    assert batched.shape == (3, 4)
    for i, row in enumerate(rows):
        np.testing.assert_allclose(batched[i], _gae(*row), rtol=0, atol=1e-6)
    # Two leading axes [2, 3, T]: the same numbers again.
    doubled = _gae(*[np.stack([s, s]) for s in stacked])
    assert doubled.shape == (2, 3, 4)
    np.testing.assert_allclose(doubled[1], batched, rtol=0, atol=1e-6)


@pytest.mark.parametrize("lambda_", [0.0, 0.8, 0.95, 1.0])
def test_gae_agrees_with_rlax_without_episode_ends(lambda_):
    rlax = pytest.importorskip("rlax")
    rng = np.random.default_rng(0)
    rewards = rng.normal(size=6).astype(np.float32)
    values = rng.normal(size=7).astype(np.float32)  # V(s_0..s_6)
    discounts = np.ones(6, np.float32)
    ours = _gae(rewards, discounts, np.zeros(6, np.float32), values[:-1], values[1:],
                gamma=0.97, lambda_=lambda_)
    theirs = jax.jit(rlax.truncated_generalized_advantage_estimation)(
        jnp.asarray(rewards), jnp.asarray(0.97 * discounts), jnp.float32(lambda_),
        jnp.asarray(np.concatenate([values[:-1], values[-1:]])))
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=0, atol=1e-5)


# =============================================================================== 2. the loss

# Stand-in linear "networks": logits = obs @ w, value = obs @ v.
OBS = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, -1.0]], np.float32)
W = np.array([[0.2, -0.1, 0.4], [0.3, 0.0, -0.5]], np.float32)
V = np.array([[0.7], [-0.3]], np.float32)
ACTIONS = np.array([0, 2, 1, 2], np.int32)


def _policy_apply(p, obs):
    return obs @ p["w"]


def _value_apply(p, obs):
    return obs @ p["v"]


def _params(w=W, v=V):
    return {"policy": {"w": jnp.asarray(w)}, "value": {"v": jnp.asarray(v)},
            "log_std": jnp.zeros((0,), jnp.float32)}


def _np_log_softmax(logits):
    z = logits - logits.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _logp_now():
    """log pi(a_i | s_i) under W (float64, NumPy)."""
    logp = _np_log_softmax((OBS @ W).astype(np.float64))
    return logp[np.arange(4), ACTIONS]


def _minibatch(ratios, advantages, weights=(1, 1, 1, 1), returns=None, old_values=None):
    """base_logprob is chosen so that pi_now / pi_base is exactly ``ratios``."""
    base = _logp_now() - np.log(np.asarray(ratios, np.float64))
    values = (OBS @ V)[:, 0]
    return {
        "observation": jnp.asarray(OBS),
        "action": jnp.asarray(ACTIONS),
        "base_logprob": jnp.asarray(base, jnp.float32),
        "weight": jnp.asarray(weights, jnp.float32),
        "advantage": jnp.asarray(advantages, jnp.float32),
        "return": jnp.asarray(values if returns is None else returns, jnp.float32),
        "old_value": jnp.asarray(values if old_values is None else old_values, jnp.float32),
    }


# Eager on purpose: the loss's primitives compile once and serve every config below (a jit
# would compile the whole loss once per objective/config combination).
_surrogate_loss = surrogate_loss


def _loss(objective, config, minibatch, params=None):
    loss, metrics = _surrogate_loss(_policy_apply, _value_apply, "categorical", objective,
                                    config, _params() if params is None else params, minibatch)
    return float(loss), {k: float(v) for k, v in metrics.items()}


PPO_OBJECTIVE = Objective(clip_epsilon=0.2, epochs=1, minibatches=1)
PLAIN_CONFIG = PPOConfig(normalize_advantages=False, entropy_coef=0.0, value_coef=0.0,
                         clip_value_loss=False)
# ratio inside [0.8, 1.2]; above 1.2 with A > 0 (clipped); below 0.8 with A < 0 (clipped);
# above 1.2 with A < 0 (min picks the unclipped, more pessimistic term).
RATIOS = [1.1, 1.5, 0.5, 1.5]
ADVANTAGES = [2.0, 1.0, -1.0, -2.0]


def test_ppo_clipped_surrogate_hand_computed():
    # per-sample min(r A, clip(r, 0.8, 1.2) A):
    #   1.1 *  2 = 2.2    (inside: both terms equal)
    #   min(1.5 * 1, 1.2 * 1)    =  1.2  (clipped)
    #   min(0.5 * -1, 0.8 * -1)  = -0.8  (clipped)
    #   min(1.5 * -2, 1.2 * -2)  = -3.0  (unclipped)
    # policy_loss = -mean(2.2, 1.2, -0.8, -3.0) = -(-0.4 / 4) = 0.1
    loss, metrics = _loss(PPO_OBJECTIVE, PLAIN_CONFIG, _minibatch(RATIOS, ADVANTAGES))
    assert metrics["policy_loss"] == pytest.approx(0.1, abs=1e-6)
    # |ratio - 1| > 0.2 for samples 1, 2, 3.
    assert metrics["clip_fraction"] == pytest.approx(0.75, abs=1e-7)
    # value_coef = entropy_coef = 0: the total is the policy loss.
    assert loss == pytest.approx(0.1, abs=1e-6)
    # approx_kl = mean(r - 1 - log r) (k3 estimator)
    r = np.array(RATIOS)
    assert metrics["approx_kl"] == pytest.approx(np.mean(r - 1 - np.log(r)), abs=1e-6)
    # Importance weights multiply each sample's term: -mean(2.2, 0.6, -1.6, -3.0) = 0.45
    _, weighted = _loss(PPO_OBJECTIVE, PLAIN_CONFIG,
                        _minibatch(RATIOS, ADVANTAGES, weights=[1.0, 0.5, 2.0, 1.0]))
    assert weighted["policy_loss"] == pytest.approx(0.45, abs=1e-6)


def test_ppo_entropy_term_and_advantage_normalization():
    config = dataclasses.replace(PLAIN_CONFIG, entropy_coef=0.1)
    loss, metrics = _loss(PPO_OBJECTIVE, config, _minibatch(RATIOS, ADVANTAGES))
    logp = _np_log_softmax((OBS @ W).astype(np.float64))
    entropy = float(np.mean(-(np.exp(logp) * logp).sum(-1)))
    assert metrics["entropy"] == pytest.approx(entropy, abs=1e-6)
    assert loss == pytest.approx(0.1 - 0.1 * entropy, abs=1e-6)
    # normalize_advantages: (A - mean) / (std + 1e-8) before the surrogate.
    adv = np.array(ADVANTAGES)
    norm = (adv - adv.mean()) / (adv.std() + 1e-8)
    r = np.array(RATIOS)
    expected = -np.mean(np.minimum(r * norm, np.clip(r, 0.8, 1.2) * norm))
    _, metrics = _loss(PPO_OBJECTIVE, dataclasses.replace(PLAIN_CONFIG,
                                                          normalize_advantages=True),
                       _minibatch(RATIOS, ADVANTAGES))
    assert metrics["policy_loss"] == pytest.approx(expected, abs=1e-6)


def test_a2c_plain_surrogate_and_its_gradient():
    objective = Objective(clip_epsilon=None, epochs=1, minibatches=1)
    weights = np.array([1.0, 0.5, 2.0, 1.0])
    adv = np.array(ADVANTAGES)
    # No clip: -mean(w r A) = -mean(2.2, 0.75, -1.0, -3.0) = -(-1.05 / 4) = 0.2625
    loss, metrics = _loss(objective, PLAIN_CONFIG, _minibatch(RATIOS, adv, weights))
    assert metrics["policy_loss"] == pytest.approx(0.2625, abs=1e-6)
    assert loss == pytest.approx(0.2625, abs=1e-6)
    assert metrics["clip_fraction"] == 0.0

    # At ratio 1 (base = the current policy) the gradient is the importance-weighted policy
    # gradient: d/dW -mean(w_i A_i pi/pi_base) = -1/N sum_i w_i A_i grad log pi(a_i|s_i), and for
    # logits = s @ W, grad_W log pi(a|s) = outer(s, onehot(a) - softmax(s @ W)).
    minibatch = _minibatch([1.0] * 4, adv, weights)

    def policy_loss(params):
        return surrogate_loss(_policy_apply, _value_apply, "categorical", objective,
                              PLAIN_CONFIG, params, minibatch)[0]

    grads = jax.jit(jax.grad(policy_loss))(_params())
    probs = np.exp(_np_log_softmax((OBS @ W).astype(np.float64)))
    onehot = np.eye(3)[ACTIONS]
    expected = -np.mean([weights[i] * adv[i] * np.outer(OBS[i], onehot[i] - probs[i])
                         for i in range(4)], axis=0)
    np.testing.assert_allclose(np.asarray(grads["policy"]["w"]), expected, rtol=0, atol=1e-6)
    # value_coef = 0: no gradient reaches the value params.
    np.testing.assert_array_equal(np.asarray(grads["value"]["v"]), 0.0)


def test_ppo_clipped_value_loss_hand_computed():
    values = (OBS @ V)[:, 0].astype(np.float64)
    # Per sample: old value (relative to the new value V) and return (relative to V).
    #   0: old = V - 0.5 -> clipped value V - 0.3; R = V + 1:  max(1, 1.3^2 = 1.69)  = 1.69
    #   1: old = V - 0.5 -> clipped value V - 0.3; R = V - 1:  max(1, 0.7^2 = 0.49)  = 1
    #   2: old = V + 0.1 (inside: clipped value V); R = V + 2: max(4, 4)             = 4
    #   3: old = V + 0.6 -> clipped value V + 0.4; R = V + 0.4: max(0.16, 0)         = 0.16
    old = values + np.array([-0.5, -0.5, 0.1, 0.6])
    returns = values + np.array([1.0, -1.0, 2.0, 0.4])
    config = dataclasses.replace(PLAIN_CONFIG, value_coef=0.5, clip_value_loss=True)
    minibatch = _minibatch(RATIOS, ADVANTAGES, returns=returns, old_values=old)
    loss, metrics = _loss(PPO_OBJECTIVE, config, minibatch)
    # value_loss = 0.5 * mean(1.69, 1, 4, 0.16) = 0.5 * 1.7125 = 0.85625
    assert metrics["value_loss"] == pytest.approx(0.85625, abs=1e-5)
    assert loss == pytest.approx(0.1 + 0.5 * 0.85625, abs=1e-5)
    # Without the clip: 0.5 * mean(1, 1, 4, 0.16) = 0.77
    _, unclipped = _loss(PPO_OBJECTIVE, dataclasses.replace(config, clip_value_loss=False),
                         minibatch)
    assert unclipped["value_loss"] == pytest.approx(0.77, abs=1e-5)
    # A2C (no clip_epsilon) never clips the value loss, whatever clip_value_loss says.
    _, a2c = _loss(Objective(None, 1, 1), config, minibatch)
    assert a2c["value_loss"] == pytest.approx(0.77, abs=1e-5)


# ====================================================== 3. actor heads vs the learner's densities

OBS_SIZE, ACTION_SIZE = 5, 3
OBS_MEAN = np.array([0.5, -1.0, 2.0, 0.0, 1.0], np.float32)
OBS_STD = np.array([2.0, 0.5, 1.0, 3.0, 0.1], np.float32)
LOG_STD = np.array([-0.5, 0.3, 0.0], np.float32)
# int8 vs fp32 on these 64 rows (|outputs| up to ~1.6): the outputs differ by at most ~0.019;
# log-probs by at most ~0.013 (categorical) and ~0.071 (Gaussian: sigma = e^-0.5 and actions
# up to ~3 sigma from the mean magnify the mean's error, see the first-order bound below).
INT8_OUTPUT_ATOL = 3e-2
INT8_LOGP_ATOL = {"categorical": 3e-2, "gaussian": 1e-1}


def _observations(n=64, seed=1):
    rng = np.random.default_rng(seed)
    obs = (OBS_MEAN + OBS_STD * rng.normal(size=(n, OBS_SIZE)) * 2.0).astype(np.float32)
    obs[0, 4] = 1e3  # normalizes to ~1e4: clipped at +10
    obs[1, 1] = -1e3  # clipped at -10
    return obs


def _normalized(obs):
    return np.clip((obs - OBS_MEAN) / OBS_STD, -OBSERVATION_CLIP, OBSERVATION_CLIP).astype(
        np.float32)


@pytest.fixture(scope="module", params=["categorical", "gaussian"])
def head_setup(request):
    discrete = request.param == "categorical"
    networks = make_networks(PPOConfig(hidden_sizes=(32, 32)), observation_size=OBS_SIZE,
                             action_size=ACTION_SIZE, discrete=discrete)
    # The policy MLP's param tree from its own init (shapes only: networks.init's orthogonal
    # initialisers cost ~20 s of eager compiles on a loaded CPU), filled with N(0, 1/fan_in)
    # weights so the logits/means are far from trivial (networks.init's 0.01-gain output layer
    # would make them ~0).
    shapes = jax.eval_shape(networks.policy.init, jax.random.key(0),
                            jnp.zeros((1, OBS_SIZE), jnp.float32))
    rng = np.random.default_rng(0)
    policy_params = jax.tree_util.tree_map(
        lambda leaf: jnp.asarray(rng.normal(size=leaf.shape) / math.sqrt(leaf.shape[0])
                                 if len(leaf.shape) == 2 else 0.1 * rng.normal(size=leaf.shape),
                                 jnp.float32), shapes)
    assert set(policy_params["params"]) == {layer_name(i) for i in range(3)}
    params = {"policy": policy_params}
    log_std = jnp.asarray(LOG_STD) if not discrete else None
    assert networks.head == request.param
    packages = {}
    for spec in ("fp32", "int8"):
        package = make_quantizer(spec).quantize(params["policy"], networks.policy, version=1)
        packages[spec] = dataclasses.replace(
            package, head=networks.head, head_log_std=None if discrete else LOG_STD,
            observation_mean=OBS_MEAN, observation_std=OBS_STD)
    obs = _observations()
    reference = np.asarray(networks.policy.apply(params["policy"], jnp.asarray(_normalized(obs))))
    rng = np.random.default_rng(2)
    if discrete:
        actions = rng.integers(0, ACTION_SIZE, size=len(obs)).astype(np.int32)
    else:
        actions = (reference + rng.normal(size=reference.shape)).astype(np.float32)
    learner_logp = np.asarray(distributions.log_prob(
        networks.head, jnp.asarray(reference), jnp.asarray(actions), log_std))
    return dict(head=networks.head, packages=packages, obs=obs, reference=reference,
                actions=actions, learner_logp=learner_logp, log_std=log_std)


@pytest.fixture(scope="module")
def runtimes():
    """One runtime of each kind for the module: a reload of a same-shaped package reuses the
    compiled network (the xla runtime recompiles only when the network changes)."""
    return {name: make_policy_runtime(name) for name in ("onnxruntime", "xla")}


@pytest.mark.parametrize("runtime_name", ["onnxruntime", "xla"])
@pytest.mark.parametrize("spec", ["fp32", "int8"])
def test_package_log_prob_matches_learner(head_setup, runtimes, runtime_name, spec):
    s = head_setup
    package = s["packages"][spec]
    runtime = runtimes[runtime_name]
    runtime.load(package)
    outputs = runtime(s["obs"])
    assert outputs.shape == (len(s["obs"]), ACTION_SIZE)
    actor_logp = policy_head.log_prob(package, outputs, s["actions"])
    assert actor_logp.dtype == np.float32 and actor_logp.shape == (len(s["obs"]),)
    if spec == "fp32":
        # The runtime applies the package's normalizer (with the clip) exactly as the learner.
        np.testing.assert_allclose(outputs, s["reference"], rtol=0, atol=1e-5)
        np.testing.assert_allclose(actor_logp, s["learner_logp"], rtol=0, atol=1e-5)
    else:
        delta = outputs - s["reference"]
        assert 0 < np.abs(delta).max() < INT8_OUTPUT_ATOL  # really quantized, but close
        err = np.abs(actor_logp - s["learner_logp"])
        assert err.max() < INT8_LOGP_ATOL[s["head"]], f"int8 log-prob error {err.max()}"
        # Per row, the log-prob moves no more than the output error allows:
        #   categorical: |d log softmax(l)_a| <= |dl_a| + |d logsumexp(l)| <= 2 max|dl|;
        #   gaussian: d log p = sum_d [(a - mu) dmu / sigma^2 - dmu^2 / (2 sigma^2)].
        if s["head"] == "categorical":
            bound = 2 * np.abs(delta).max(axis=-1)
        else:
            var = np.exp(2 * LOG_STD.astype(np.float64))
            bound = ((np.abs(s["actions"] - s["reference"]) * np.abs(delta)
                      + 0.5 * delta**2) / var).sum(-1)
        assert np.all(err <= bound + 1e-5)


def test_head_sample_log_prob_and_mode(head_setup):
    s = head_setup
    package = s["packages"]["fp32"]
    outputs = s["reference"]
    rng = np.random.default_rng(3)
    actions, logp = policy_head.sample(package, outputs, rng)
    assert logp.dtype == np.float32 and logp.shape == (len(outputs),)
    np.testing.assert_array_equal(logp, policy_head.log_prob(package, outputs, actions))
    # The learner agrees with the logprob the actor reports for its own sample.
    learner = np.asarray(distributions.log_prob(s["head"], jnp.asarray(outputs),
                                                jnp.asarray(actions), s["log_std"]))
    np.testing.assert_allclose(logp, learner, rtol=0, atol=1e-5)
    mode = policy_head.mode(package, outputs)
    if s["head"] == "categorical":
        assert actions.dtype == np.int32 and actions.shape == (len(outputs),)
        assert actions.min() >= 0 and actions.max() < ACTION_SIZE
        np.testing.assert_array_equal(mode, np.argmax(outputs, axis=-1))
        assert mode.dtype == np.int32
    else:
        assert actions.dtype == np.float32 and actions.shape == outputs.shape
        np.testing.assert_array_equal(mode, outputs.astype(np.float32))
        assert mode.dtype == np.float32


def test_head_sample_frequencies(head_setup):
    s = head_setup
    package = s["packages"]["fp32"]
    n = 20_000
    # The row whose softmax is the least uniform (for a Gaussian head any row does).
    spread = np.ptp(s["reference"], axis=-1)
    row = s["reference"][[int(np.argmax(spread))]].astype(np.float32)
    outputs = np.repeat(row, n, axis=0)
    actions, _ = policy_head.sample(package, outputs, np.random.default_rng(4))
    if s["head"] == "categorical":
        probs = np.exp(_np_log_softmax(row[0].astype(np.float64)))
        assert probs.max() - probs.min() > 0.1, "logits too flat for a meaningful check"
        freqs = np.bincount(actions, minlength=ACTION_SIZE) / n
        np.testing.assert_allclose(freqs, probs, rtol=0, atol=0.02)
    else:
        std = np.exp(LOG_STD.astype(np.float64))
        # 20k draws: the sample mean's std is std / 141 (~0.7 % of std).
        np.testing.assert_allclose(actions.mean(0), row[0], rtol=0, atol=0.03 * std.max())
        np.testing.assert_allclose(actions.std(0), std, rtol=0.03)
        entropy = float(distributions.entropy("gaussian", jnp.asarray(row),
                                              jnp.asarray(LOG_STD))[0])
        # Monte-Carlo entropy -E[log p] from the actor's own log-probs.
        mc = -float(np.mean(policy_head.log_prob(package, outputs, actions)))
        assert mc == pytest.approx(entropy, abs=0.05)


# ============================================== 3b. gSDE: the features ride through the package

GSDE_FEATURES = 32
# [features, actions]: one row per feature, spread so that the variance is not one number.
GSDE_LOG_STD = np.linspace(-2.0, 0.5, GSDE_FEATURES * ACTION_SIZE,
                           dtype=np.float32).reshape(GSDE_FEATURES, ACTION_SIZE)


@pytest.fixture(scope="module")
def gsde_setup():
    config = PPOConfig(hidden_sizes=(32, GSDE_FEATURES), gsde=True, orthogonal_init=False)
    networks = make_networks(config, observation_size=OBS_SIZE, action_size=ACTION_SIZE,
                             discrete=False)
    assert networks.head == "gsde" and networks.gsde_features == GSDE_FEATURES
    assert networks.deployed_policy.output_size == ACTION_SIZE + GSDE_FEATURES
    params = networks.init(jax.random.key(0))
    assert params["log_std"].shape == (GSDE_FEATURES, ACTION_SIZE)
    deployed = deployed_params(params["policy"])
    packages = {}
    for spec in ("fp32", "int8"):
        package = make_quantizer(spec).quantize(deployed, networks.deployed_policy, version=1)
        packages[spec] = dataclasses.replace(
            package, head="gsde", head_log_std=GSDE_LOG_STD, observation_mean=OBS_MEAN,
            observation_std=OBS_STD)
    obs = _observations()
    normalized = jnp.asarray(_normalized(obs))
    mean = np.asarray(networks.policy.apply(params["policy"], normalized))
    features = np.asarray(mlp_features(params["policy"], normalized, config.activation))
    return dict(networks=networks, packages=packages, obs=obs, mean=mean, features=features)


def _jax_gsde_logp(mean, features, actions):
    return np.asarray(distributions.log_prob("gsde", jnp.asarray(mean), jnp.asarray(actions),
                                             jnp.asarray(GSDE_LOG_STD), jnp.asarray(features)))


@pytest.mark.parametrize("runtime_name", ["onnxruntime", "xla"])
@pytest.mark.parametrize("spec", ["fp32", "int8"])
def test_gsde_package_outputs_the_mean_and_the_features(gsde_setup, runtimes, runtime_name,
                                                        spec):
    """The package's output layer [W | I] passes the features it reads through unchanged: every
    runtime gives the mean and the features with no change of its own, and the actor's
    log-probability is the learner's."""
    s = gsde_setup
    package = s["packages"][spec]
    runtime = runtimes[runtime_name]
    runtime.load(package)
    outputs = runtime(s["obs"])
    assert outputs.shape == (len(s["obs"]), ACTION_SIZE + GSDE_FEATURES)
    mean, features = policy_head.gsde_parts(package, outputs)
    actions = (s["mean"] + np.random.default_rng(5).normal(size=s["mean"].shape)).astype(
        np.float32)
    actor_logp = policy_head.log_prob(package, outputs, actions)
    if spec == "fp32":
        np.testing.assert_allclose(mean, s["mean"], rtol=0, atol=1e-5)
        np.testing.assert_allclose(features, s["features"], rtol=0, atol=1e-5)
        np.testing.assert_allclose(actor_logp, _jax_gsde_logp(s["mean"], s["features"], actions),
                                   rtol=1e-4, atol=1e-4)
    else:
        # The features are the int8 network's own (its quantized last-layer input), close to
        # the learner's fp32 ones; the log-probability is exact for what the package computed.
        assert 0 < np.abs(features - s["features"]).max() < 5e-2
        np.testing.assert_allclose(actor_logp, _jax_gsde_logp(mean, features, actions),
                                   rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(policy_head.mode(package, outputs), mean.astype(np.float32))


def test_gsde_noise_is_held_for_its_period_and_has_the_heads_variance(gsde_setup):
    s = gsde_setup
    package = s["packages"]["fp32"]
    outputs = np.concatenate([s["mean"], s["features"]], axis=1).astype(np.float32)[:4]
    noise = policy_head.GsdeNoise(period=3)
    rng = np.random.default_rng(6)
    draws = [policy_head.sample(package, outputs, rng, noise) for _ in range(6)]
    # The same noise matrices for 3 steps (the same outputs give the same actions), then new.
    for i in (1, 2):
        np.testing.assert_array_equal(draws[i][0], draws[0][0])
    assert not np.allclose(draws[3][0], draws[0][0])
    np.testing.assert_array_equal(draws[4][0], draws[3][0])
    for actions, logp in draws:
        np.testing.assert_array_equal(logp, policy_head.log_prob(package, outputs, actions))
        np.testing.assert_allclose(logp, _jax_gsde_logp(outputs[:, :ACTION_SIZE],
                                                        outputs[:, ACTION_SIZE:], actions),
                                   rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="GsdeNoise"):
        policy_head.sample(package, outputs, rng)
    # Redrawn every step, one row's actions spread with the head's per-action variance.
    n = 20_000
    row = np.repeat(outputs[:1], n, axis=0)
    actions, _ = policy_head.sample(package, row, rng, policy_head.GsdeNoise(period=1))
    variance = np.asarray(distributions.gsde_variance(jnp.asarray(outputs[:1, ACTION_SIZE:]),
                                                      jnp.asarray(GSDE_LOG_STD)))[0]
    np.testing.assert_allclose(actions.std(0), np.sqrt(variance), rtol=0.03)
    np.testing.assert_allclose(actions.mean(0), outputs[0, :ACTION_SIZE], rtol=0,
                               atol=0.03 * np.sqrt(variance).max())
    entropy = float(distributions.entropy("gsde", jnp.asarray(outputs[:1, :ACTION_SIZE]),
                                          jnp.asarray(GSDE_LOG_STD),
                                          jnp.asarray(outputs[:1, ACTION_SIZE:]))[0])
    assert -float(np.mean(policy_head.log_prob(package, row, actions))) == pytest.approx(
        entropy, abs=0.05)


def test_gsde_package_checks_its_log_std_shape(gsde_setup):
    package = gsde_setup["packages"]["fp32"]
    data = package.to_bytes()
    back = PolicyPackage.from_bytes(data)
    assert back.head == "gsde" and back.head_log_std.shape == (GSDE_FEATURES, ACTION_SIZE)
    assert back.to_bytes() == data
    for bad in (GSDE_LOG_STD[0], GSDE_LOG_STD[1:], GSDE_LOG_STD[:, :2]):
        with pytest.raises(PackageError, match="gsde head's log_std"):
            dataclasses.replace(package, head_log_std=bad)
    with pytest.raises(ValueError, match="mlp torso"):
        PPOConfig(gsde=True, torso="minatar")


# ============================================================================== 4. the queue

SIGNATURE = {"x": ArraySpec((2,), np.float32)}


def _item(i):
    return {"x": np.array([i, -i], np.float32)}


def test_queue_limiter_config_round_trip():
    assert rate_limiter_from_config(Queue(3).config()) == Queue(3)
    assert Queue(3).config() == {"type": "Queue", "size": 3}
    assert Queue(3).size == 3
    assert rate_limiter_from_config(Queue(3).config()) != Queue(4)
    table = queue_table("q", 3, SIGNATURE)
    assert table.rate_limiter == Queue(3)
    assert isinstance(table.sampler, Fifo)
    assert table.max_times_sampled == 1


def test_queue_is_fifo_and_bounded():
    table = queue_table("q", 3, SIGNATURE, seed=0)
    assert not table.can_sample()
    with pytest.raises(RateLimiterTimeout):
        table.sample(1, timeout=0.05)  # empty: the sample times out
    for i in range(3):
        assert table.can_insert()
        table.insert(_item(i), timeout=0.05)
    assert table.size == 3
    assert not table.can_insert()
    with pytest.raises(RateLimiterTimeout):
        table.insert(_item(99), timeout=0.05)  # full: refused, not evicting the oldest
    assert table.size == 3 and table.num_inserts == 3 and table.num_deletes == 0

    first = table.sample(1, timeout=0.05)
    np.testing.assert_array_equal(first.data["x"][:, 0], [0.0])
    assert table.size == 2 and table.num_deletes == 1  # sampled once: gone
    assert table.can_insert()  # a slot freed
    table.insert(_item(3), timeout=0.05)
    assert not table.can_insert()

    batch = table.sample(3, timeout=0.05)
    np.testing.assert_array_equal(batch.data["x"][:, 0], [1.0, 2.0, 3.0])  # oldest first
    assert len(set(batch.keys.tolist())) == 3
    assert table.size == 0
    assert table.num_samples == 4 and table.num_deletes == 4
    with pytest.raises(RateLimiterTimeout):
        table.sample(1, timeout=0.05)  # every item was sampled exactly once


def test_queue_each_item_sampled_exactly_once_in_order():
    table = queue_table("q", 4, SIGNATURE, seed=0)
    inserted, sampled = [], []
    rng = np.random.default_rng(0)
    next_value = 0
    for _ in range(200):
        if rng.random() < 0.5 and table.can_insert():
            inserted.append(table.insert(_item(next_value)))
            next_value += 1
        elif table.can_sample():
            batch = table.sample(int(rng.integers(1, table.size + 1)))
            sampled += batch.keys.tolist()
            # The data travel with their key (item k holds value k).
            np.testing.assert_array_equal(batch.data["x"][:, 0], batch.keys.astype(np.float32))
        assert table.size == len(inserted) - len(sampled)
        assert table.size <= 4
    while table.can_sample():
        sampled += table.sample(1).keys.tolist()
    assert sampled == inserted  # FIFO, each exactly once
    assert len(inserted) > 20
    assert table.num_samples == table.num_inserts == table.num_deletes == len(inserted)


# =========================================================================== 5. the unroll adder


def _obs(i):
    return np.array([i, 10 * i], np.float32)


def test_unroll_adder_across_episode_boundaries():
    emitted = []
    adder = UnrollAdder(emitted.append, unroll_length=3)

    def add(a, timestep, version):
        adder.add(np.array([a, -a], np.float32), timestep,
                  extras={"behaviour_logprob": np.float32(-0.1 * a),
                          "policy_version": np.int64(version),
                          "vec": np.array([a, a + 1, a + 2], np.int32)})

    # Episode 1: o0 -a0-> o1 -a1-> o2 (terminated).
    adder.add_first(dm_env.restart(_obs(0)))
    add(0, dm_env.transition(1.0, _obs(1)), 7)
    add(1, dm_env.termination(2.0, _obs(2)), 7)
    assert emitted == []
    # Episode 2: o3 -a2-> o4 -a3-> o5 (truncated).
    adder.add_first(dm_env.restart(_obs(3)))
    add(2, dm_env.transition(3.0, _obs(4)), 8)
    assert len(emitted) == 1
    add(3, dm_env.truncation(4.0, _obs(5)), 8)
    # Episode 3: o6 -a4-> o7 -a5-> o8 -a6-> o9
    adder.add_first(dm_env.restart(_obs(6)))
    add(4, dm_env.transition(5.0, _obs(7)), 9)
    add(5, dm_env.transition(6.0, _obs(8)), 9)
    assert len(emitted) == 2
    add(6, dm_env.transition(7.0, _obs(9)), 9)  # a partial unroll: held back
    assert len(emitted) == 2

    first, second = emitted
    expected_keys = {"observation", "action", "reward", "discount", "last", "next_observation",
                     "behaviour_logprob", "policy_version", "vec"}
    assert set(first) == expected_keys
    shapes = {"observation": (3, 2), "action": (3, 2), "reward": (3,), "discount": (3,),
              "last": (3,), "next_observation": (3, 2), "behaviour_logprob": (3,),
              "policy_version": (3,), "vec": (3, 3)}
    for key, shape in shapes.items():
        assert first[key].shape == shape, key
    for key in ("observation", "next_observation", "reward", "discount", "last"):
        assert first[key].dtype == np.float32, key
    assert first["policy_version"].dtype == np.int64
    assert first["vec"].dtype == np.int32

    # Unroll 1: o0->o1, o1->o2 (termination: discount 0, last 1), o3->o4 (new episode).
    np.testing.assert_array_equal(first["observation"], np.stack([_obs(0), _obs(1), _obs(3)]))
    np.testing.assert_array_equal(first["next_observation"],
                                  np.stack([_obs(1), _obs(2), _obs(4)]))
    np.testing.assert_array_equal(first["reward"], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(first["discount"], [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(first["last"], [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(first["action"][:, 0], [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(first["policy_version"], [7, 7, 8])
    np.testing.assert_allclose(first["behaviour_logprob"], [0.0, -0.1, -0.2], atol=1e-7)
    np.testing.assert_array_equal(first["vec"], [[0, 1, 2], [1, 2, 3], [2, 3, 4]])
    # Unroll 2: o4->o5 (truncation: discount 1, last 1, next_observation the final o5, not
    # the next episode's o6), o6->o7, o7->o8.
    np.testing.assert_array_equal(second["observation"], np.stack([_obs(4), _obs(6), _obs(7)]))
    np.testing.assert_array_equal(second["next_observation"],
                                  np.stack([_obs(5), _obs(7), _obs(8)]))
    np.testing.assert_array_equal(second["discount"], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(second["last"], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(second["reward"], [4.0, 5.0, 6.0])

    # reset drops the partial unroll (a6); the next unroll starts after it.
    adder.reset()
    adder.add_first(dm_env.restart(_obs(20)))
    for i in range(3):
        add(10 + i, dm_env.transition(0.5, _obs(21 + i)), 10)
    assert len(emitted) == 3
    np.testing.assert_array_equal(emitted[2]["observation"][:, 0], [20.0, 21.0, 22.0])
    np.testing.assert_array_equal(emitted[2]["action"][:, 0], [10.0, 11.0, 12.0])


def test_unroll_adder_partial_never_emitted_and_rejects_misuse():
    emitted = []
    adder = UnrollAdder(emitted.append, unroll_length=4)
    adder.add_first(dm_env.restart(_obs(0)))
    for i in range(3):
        adder.add(0, dm_env.transition(1.0, _obs(i + 1)))
    adder.reset()  # an actor that stops mid-unroll
    assert emitted == []
    with pytest.raises(ValueError):
        adder.add(0, dm_env.transition(1.0, _obs(1)))  # no episode in progress
    adder.add_first(dm_env.restart(_obs(0)))
    adder.add(0, dm_env.transition(1.0, _obs(1)), extras={"e": 1.0})
    with pytest.raises(ValueError):
        adder.add(0, dm_env.transition(1.0, _obs(2)))  # extras must not change mid-unroll
    with pytest.raises(ValueError):
        adder.add(0, dm_env.transition(1.0, _obs(2)), extras={"reward": 1.0})
    with pytest.raises(ValueError):
        UnrollAdder(emitted.append, unroll_length=0)


def test_reward_scaling_adder_matches_running_std_of_discounted_return():
    from gymnasium.wrappers.utils import RunningMeanStd

    gamma = 0.9
    emitted = []
    adder = RewardScalingAdder(UnrollAdder(emitted.append, unroll_length=8), discount=gamma)
    # (reward, kind): kind "mid", "term" (termination) or "trunc" (truncation), 8 steps.
    steps = [(0.01, "mid"), (2.0, "mid"), (-1.0, "term"), (3.0, "mid"), (0.5, "trunc"),
             (1.0, "mid"), (-2.0, "mid"), (4.0, "mid")]
    adder.add_first(dm_env.restart(_obs(0)))
    for i, (r, kind) in enumerate(steps):
        make = {"mid": dm_env.transition, "term": dm_env.termination,
                "trunc": dm_env.truncation}[kind]
        adder.add(0, make(r, _obs(i + 1)))
        if kind != "mid":
            adder.add_first(dm_env.restart(_obs(100 + i)))
    assert len(emitted) == 1
    got = emitted[0]["reward"]
    assert got.dtype == np.float32

    # Independent recomputation: the discounted return of this environment's episode (reset
    # after each LAST, termination or truncation), its running moments, r / sqrt(var + 1e-8)
    # clipped to +-10.
    moments = RunningMeanStd(shape=())
    ret, expected, returns = 0.0, [], []
    for r, kind in steps:
        ret = gamma * ret + r
        returns.append(ret)
        moments.update(np.array([ret]))
        expected.append(np.clip(r / np.sqrt(moments.var + 1e-8), -REWARD_CLIP, REWARD_CLIP))
        if kind != "mid":
            ret = 0.0
    np.testing.assert_allclose(returns[:4], [0.01, 2.009, 0.8081, 3.0], atol=1e-12)
    np.testing.assert_allclose(got, np.array(expected, np.float32), rtol=1e-6, atol=1e-6)

    # By hand for the first step: one update from (mean 0, var 1, count 1e-4) with x = 0.01 gives
    # var = (1e-4 + x^2 * 1e-4 / 1.0001) / 1.0001, so 0.01 / sqrt(var + 1e-8) ~= 0.99995.
    var0 = (1e-4 + 0.01**2 * 1e-4 / 1.0001) / 1.0001
    assert got[0] == pytest.approx(0.01 / math.sqrt(var0 + 1e-8), rel=1e-5)
    assert got[0] == pytest.approx(0.99995, abs=1e-4)
    # Everything else is passed through unscaled.
    np.testing.assert_array_equal(emitted[0]["discount"], [1, 1, 0, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(emitted[0]["last"], [0, 0, 1, 0, 1, 0, 0, 0])

    # A first reward of 2 on a fresh adder: var = (1e-4 + 4e-4 / 1.0001) / 1.0001 ~= 5e-4, so
    # 2 / sqrt(5e-4) ~= 89 is clipped to +10 (and -2 to -10).
    for reward in (2.0, -2.0):
        emitted.clear()
        fresh = RewardScalingAdder(UnrollAdder(emitted.append, unroll_length=1), discount=gamma)
        fresh.add_first(dm_env.restart(_obs(0)))
        fresh.add(0, dm_env.transition(reward, _obs(1)))
        assert emitted[0]["reward"][0] == math.copysign(REWARD_CLIP, reward)


# ============================================================================= 6. the package


def _gaussian_package(**overrides):
    layers = (
        DenseParams(np.arange(12, dtype=np.float32).reshape(4, 3) / 7, np.ones(3, np.float32)),
        DenseParams(np.array([[1, -2], [3, 4], [-127, 5]], np.int8),
                    np.array([0.5, -0.5], np.float32), np.array([0.01, 0.02], np.float32)),
    )
    fields = dict(quantizer="int8", version=12, layers=layers, activation="tanh",
                  activation_bits=8, head="gaussian",
                  head_log_std=np.array([-0.5, 0.25], np.float32),
                  observation_mean=np.array([0.0, 1.0, -2.0, 3.0], np.float32),
                  observation_std=np.array([1.0, 0.5, 2.0, 0.1], np.float32))
    fields.update(overrides)
    return PolicyPackage(**fields)


def test_package_round_trip_with_head_and_normalizer():
    assert FORMAT_VERSION >= 4  # 4 brought the head and the normalizer
    package = _gaussian_package()
    restored = PolicyPackage.from_bytes(package.to_bytes())
    for field in ("quantizer", "version", "activation", "output_activation", "activation_bits",
                  "unsigned_activations", "head"):
        assert getattr(restored, field) == getattr(package, field), field
    for field in ("head_log_std", "observation_mean", "observation_std"):
        np.testing.assert_array_equal(getattr(restored, field), getattr(package, field))
        assert getattr(restored, field).dtype == np.float32
    assert len(restored.layers) == 2
    for a, b in zip(restored.layers, package.layers):
        np.testing.assert_array_equal(a.kernel, b.kernel)
        assert a.kernel.dtype == b.kernel.dtype
        np.testing.assert_array_equal(a.bias, b.bias)
        if b.kernel_scale is None:
            assert a.kernel_scale is None
        else:
            np.testing.assert_array_equal(a.kernel_scale, b.kernel_scale)
    assert restored.nbytes == package.nbytes
    assert restored.stochastic
    # A categorical package without normalizer round-trips to exactly that.
    plain = dataclasses.replace(package, head="categorical", head_log_std=None,
                                observation_mean=None, observation_std=None)
    back = PolicyPackage.from_bytes(plain.to_bytes())
    assert back.head == "categorical"
    assert back.head_log_std is None and back.observation_mean is None
    assert back.observation_std is None


def test_old_reader_refuses_new_package(monkeypatch):
    data = _gaussian_package().to_bytes()
    monkeypatch.setattr(package_module, "READABLE_FORMATS", (1, 2, 3))
    with pytest.raises(PackageError, match="format"):
        PolicyPackage.from_bytes(data)


def test_package_validates_head_fields():
    with pytest.raises(PackageError):
        _gaussian_package(head_log_std=None)  # gaussian without log_std
    with pytest.raises(PackageError):
        _gaussian_package(head="categorical")  # log_std on a head that has none
    with pytest.raises(PackageError):
        _gaussian_package(head="beta")
    with pytest.raises(PackageError):
        _gaussian_package(observation_std=None)  # half a normalizer
    assert not _gaussian_package(head="deterministic", head_log_std=None).stochastic


def test_package_normalize_clips_at_ten():
    package = _gaussian_package(observation_mean=np.zeros(4, np.float32),
                                observation_std=np.array([1.0, 1.0, 2.0, 0.5], np.float32))
    obs = np.array([[100.0, -100.0, 3.0, 2.0], [10.5, -9.5, -40.0, 5.0]], np.float32)
    got = package.normalize(obs)
    np.testing.assert_array_equal(got, [[10.0, -10.0, 1.5, 4.0], [10.0, -9.5, -10.0, 10.0]])
    assert got.dtype == np.float32
    assert OBSERVATION_CLIP == 10.0
    # Without a normalizer the observations pass through untouched.
    bare = _gaussian_package(observation_mean=None, observation_std=None)
    assert bare.normalize(obs) is obs
