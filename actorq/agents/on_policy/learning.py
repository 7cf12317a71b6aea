"""The on-policy learner core shared by PPO and A2C.

One call of :meth:`OnPolicyLearner.step` takes a batch of unrolls ``[N, T, ...]`` from the queue
and runs one jitted update:

1. the observations are normalized with the statistics the acting package carried, which then
   take in the batch (when observations are normalized);
2. values, the learner's own log-probabilities before the update (``pi_old``) and GAE;
3. ``epochs`` passes over ``minibatches`` shuffled minibatches of the N*T steps (PPO), or one
   pass over the whole batch (A2C), each an optimizer step on :func:`surrogate_loss`.

Quantized actors make the behaviour policy ``mu`` (the package that chose each action, its
log-probability carried in the unroll) differ from the learner's ``pi_old`` even at the same
version. ``behavior_logprob`` picks the ratio's denominator, ``mu`` (``actor``) or ``pi_old``
(``learner``); ``is_correction="truncated"`` weights each step by ``min(pi_old / mu, is_cap)``
(the truncated importance sampling of FP8/INT8-rollout RL systems), which for the ``actor``
denominator becomes ``min(1, is_cap * mu / pi_old)``. Every update logs the mismatch
``behaviour_kl`` (KL(pi_old || mu), estimated on the actions mu took as E_mu[rho log rho],
rho = pi_old / mu), the fraction of steps whose weight the cap truncated, the fraction of
clipped ratios and the policy lag in versions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from actorq.agents.on_policy import distributions, normalization
from actorq.agents.on_policy.advantages import generalized_advantages
from actorq.agents.on_policy.config import OnPolicyConfig
from actorq.agents.on_policy.networks import OnPolicyNetworks, deployed_params, mlp_features
from actorq.agents.on_policy.unrolls import UNROLL_FIELDS
from actorq.networks.conv import scan_without_loop
from actorq.quantization.qat import QATSchedule

Batch = dict[str, jax.Array]


class TrainingState(NamedTuple):
    params: Any  # {"policy", "value"[, "log_std"]}
    opt_state: Any
    moments: normalization.RunningMoments
    updates: jax.Array
    key: jax.Array


class Objective(NamedTuple):
    """How an agent turns ratios and advantages into its policy loss, and how it iterates."""

    clip_epsilon: float | None  # None: the plain (importance-weighted) policy gradient
    epochs: int
    minibatches: int


def head_inputs(head: str, params: Any, observation: jax.Array,
                activation: str) -> tuple[jax.Array | None, jax.Array | None]:
    """``(log_std, features)`` the head's density takes besides the outputs: the log-std of a
    Gaussian or gSDE head, and a gSDE head's features (no gradient: SB3's default
    ``learn_features=False``, the features learn through the mean alone)."""
    log_std = params["log_std"] if head in ("gaussian", "gsde") else None
    features = None
    if head == "gsde":
        features = jax.lax.stop_gradient(mlp_features(params["policy"], observation, activation))
    return log_std, features


def surrogate_loss(
    policy_apply: Callable, value_apply: Callable, head: str, objective: Objective,
    config: OnPolicyConfig, params: Any, minibatch: Batch,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The clipped (PPO) or plain (A2C) policy-gradient surrogate plus value and entropy terms,
    on a minibatch of flat steps (pure).

    ``minibatch`` holds ``observation`` (normalized), ``action``, ``base_logprob`` (the ratio's
    denominator), ``weight`` (importance weight, no gradient), ``advantage``, ``return`` and
    ``old_value``.
    """
    outputs = policy_apply(params["policy"], minibatch["observation"])
    log_std, features = head_inputs(head, params, minibatch["observation"], config.activation)
    logp = distributions.log_prob(head, outputs, minibatch["action"], log_std, features)
    log_ratio = logp - minibatch["base_logprob"]
    ratio = jnp.exp(log_ratio)
    advantage = minibatch["advantage"]
    if config.normalize_advantages:
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    weight = minibatch["weight"]
    if objective.clip_epsilon is None:
        pg_loss = -jnp.mean(weight * ratio * advantage)
        clipped = jnp.zeros_like(ratio)
    else:
        eps = objective.clip_epsilon
        unclipped = ratio * advantage
        clipped_term = jnp.clip(ratio, 1.0 - eps, 1.0 + eps) * advantage
        pg_loss = -jnp.mean(weight * jnp.minimum(unclipped, clipped_term))
        clipped = (jnp.abs(ratio - 1.0) > eps).astype(jnp.float32)
    value = value_apply(params["value"], minibatch["observation"])[..., 0]
    value_error = (value - minibatch["return"]) ** 2
    if objective.clip_epsilon is not None and config.clip_value_loss:
        clipped_value = minibatch["old_value"] + jnp.clip(
            value - minibatch["old_value"], -objective.clip_epsilon, objective.clip_epsilon)
        value_error = jnp.maximum(value_error, (clipped_value - minibatch["return"]) ** 2)
    value_loss = 0.5 * jnp.mean(value_error)
    entropy = jnp.mean(distributions.entropy(head, outputs, log_std, features))
    loss = pg_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    metrics = {
        "policy_loss": pg_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        "clip_fraction": jnp.mean(clipped),
        # Schulman's k3 estimator of KL(pi_base || pi_new) on the minibatch.
        "approx_kl": jnp.mean(ratio - 1.0 - log_ratio),
    }
    return loss, metrics


class OnPolicyLearner:
    """Learns from batches of unrolls (``[N, T, ...]`` arrays, :data:`UNROLL_FIELDS`).

    ``steps`` counts updates: one per batch, one policy version each.
    """

    def __init__(self, networks: OnPolicyNetworks, config: OnPolicyConfig,
                 objective: Objective, optimizer: optax.GradientTransformation,
                 batches: Iterator[dict[str, np.ndarray]], seed: int) -> None:
        self._networks = networks
        self._config = config
        self._objective = objective
        self._batches = batches
        self._qat = QATSchedule(config.qat_bits, config.qat_delay_steps)
        self._optimizer = optax.chain(optax.clip_by_global_norm(config.max_gradient_norm),
                                      optimizer)
        key, init_key = jax.random.split(jax.random.key(seed))
        params = networks.init(init_key)
        self._state = TrainingState(
            params=params,
            opt_state=self._optimizer.init(params),
            moments=normalization.init_moments(networks.observation_size),
            updates=jnp.zeros((), jnp.int32),
            key=jax.random.key_data(key),
        )
        self._update_fp32 = jax.jit(functools.partial(self._update, networks.policy))
        self._update_qat = (jax.jit(functools.partial(self._update, networks.qat_policy))
                            if networks.qat_policy is not None else None)
        self._steps = 0

    # ------------------------------------------------------------------------ the update

    def _learning_rate_scale(self, updates: jax.Array) -> jax.Array:
        decay = self._config.learning_rate_decay_updates
        if decay <= 0:
            return jnp.ones((), jnp.float32)
        return jnp.maximum(1.0 - updates.astype(jnp.float32) / decay, 0.0)

    def _update(self, policy, state: TrainingState, batch: Batch):
        config, objective, head = self._config, self._objective, self._networks.head
        value_apply = self._networks.value.apply
        moments = state.moments
        if config.normalize_observations:
            # The actor normalized with the moments of the package it ran, this state's at lag
            # 0: the update sees the inputs the actor saw, and the batch's statistics go to the
            # next package.
            observation = normalization.normalize(moments, batch["observation"])
            next_observation = normalization.normalize(moments, batch["next_observation"])
            moments = normalization.update_moments(moments, batch["observation"])
        else:
            observation, next_observation = batch["observation"], batch["next_observation"]
        params = state.params
        log_std, features = head_inputs(head, params, observation, config.activation)
        values = value_apply(params["value"], observation)[..., 0]
        next_values = value_apply(params["value"], next_observation)[..., 0]
        old_logp = distributions.log_prob(
            head, policy.apply(params["policy"], observation), batch["action"], log_std, features)
        actor_logp = batch["behaviour_logprob"]
        advantages = generalized_advantages(
            batch["reward"], batch["discount"], batch["last"], values, next_values,
            config.discount, config.gae_lambda)
        returns = advantages + values
        # rho = pi_old / mu: how much more (or less) likely the learner's policy finds the
        # actions the deployed package took.
        log_rho = old_logp - actor_logp
        rho = jnp.exp(log_rho)
        base_logp = actor_logp if config.behavior_logprob == "actor" else old_logp
        if config.is_correction == "truncated":
            truncated = jnp.minimum(rho, config.is_cap)
            # The ratio already divides by mu in "actor" mode: weight by the truncation only.
            weight = truncated / jnp.exp(old_logp - base_logp)
        else:
            weight = jnp.ones_like(rho)
        flat = {
            "observation": observation,
            "action": batch["action"],
            "base_logprob": base_logp,
            "weight": weight,
            "advantage": advantages,
            "return": returns,
            "old_value": values,
        }
        steps = int(np.prod(batch["reward"].shape))
        flat = jax.tree_util.tree_map(lambda x: x.reshape(steps, *x.shape[2:]), flat)
        flat = jax.tree_util.tree_map(jax.lax.stop_gradient, flat)
        loss_fn = functools.partial(surrogate_loss, policy.apply, value_apply, head,
                                    objective, config)
        grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
        lr_scale = self._learning_rate_scale(state.updates)
        minibatch_size = steps // objective.minibatches
        # No loop for conv networks: XLA:CPU runs convolutions inside a loop body several times
        # slower (docs/pixels.md).
        unrolled = self._networks.observation_shape is not None

        def sgd_step(carry, indices):
            params, opt_state = carry
            minibatch = jax.tree_util.tree_map(lambda x: x[indices], flat)
            (_, metrics), grads = grad_fn(params, minibatch)
            updates, opt_state = self._optimizer.update(grads, opt_state, params)
            updates = jax.tree_util.tree_map(lambda u: u * lr_scale, updates)
            return (optax.apply_updates(params, updates), opt_state), metrics

        def epoch(carry, key):
            order = jax.random.permutation(key, steps)[: minibatch_size * objective.minibatches]
            return scan_without_loop(sgd_step, carry,
                                     order.reshape(objective.minibatches, minibatch_size),
                                     unrolled)

        key = jax.random.wrap_key_data(state.key)
        key, *epoch_keys = jax.random.split(key, objective.epochs + 1)
        (params, opt_state), metrics = scan_without_loop(
            epoch, (state.params, state.opt_state), jnp.stack(epoch_keys), unrolled)
        metrics = jax.tree_util.tree_map(jnp.mean, metrics)
        explained = 1.0 - jnp.var(returns - values) / (jnp.var(returns) + 1e-8)
        metrics.update({
            "behaviour_kl": jnp.mean(rho * log_rho),
            "behaviour_truncated_fraction": jnp.mean((rho > config.is_cap).astype(jnp.float32)),
            "importance_weight": jnp.mean(weight),
            "explained_variance": explained,
            "learning_rate": config.learning_rate * lr_scale,
            "advantage_std": jnp.std(advantages),
        })
        if head in ("gaussian", "gsde"):
            metrics["log_std"] = jnp.mean(params["log_std"])
        new_state = TrainingState(params, opt_state, moments, state.updates + 1,
                                  jax.random.key_data(key))
        return new_state, metrics

    # ------------------------------------------------------------------------ the protocol

    @property
    def steps(self) -> int:
        return self._steps

    def step(self) -> dict[str, float]:
        raw = next(self._batches)
        batch = {k: jnp.asarray(raw[k]) for k in UNROLL_FIELDS if k != "policy_version"}
        qat_on = self._update_qat is not None and self._qat.active(self._steps)
        update = self._update_qat if qat_on else self._update_fp32
        self._state, metrics = update(self._state, batch)
        out = {k: float(v) for k, v in metrics.items()}
        out["qat_active"] = float(qat_on)
        versions = np.asarray(raw["policy_version"])
        out["sample_policy_lag"] = float(self._steps - versions.mean())
        out["sample_policy_lag_max"] = float(self._steps - versions.min())
        self._steps += 1
        return out

    def policy_params(self) -> Any:
        """The params of the network the actors run (what the quantizers package): the policy
        MLP's, with a gSDE policy's features passed through its output layer."""
        if self._networks.head == "gsde":
            return deployed_params(self._state.params["policy"])
        return self._state.params["policy"]

    def policy_extras(self) -> dict[str, Any]:
        """What the package carries besides the MLP: the head, its log-std and the observation
        normalizer (``PolicyPackage`` fields)."""
        extras: dict[str, Any] = {"head": self._networks.head}
        if self._networks.head in ("gaussian", "gsde"):
            extras["head_log_std"] = np.asarray(self._state.params["log_std"], np.float32)
        if self._config.normalize_observations:
            moments = self._state.moments
            extras["observation_mean"] = np.asarray(moments.mean, np.float32)
            extras["observation_std"] = np.asarray(normalization.std(moments), np.float32)
        return extras

    def state(self) -> Any:
        state = self._state._asdict()
        state["moments"] = state["moments"]._asdict()
        return state

    def restore(self, state: Any) -> None:
        state = dict(state)
        state["moments"] = normalization.RunningMoments(**state["moments"])
        self._state = TrainingState(**state)
        self._steps = int(np.asarray(self._state.updates))
