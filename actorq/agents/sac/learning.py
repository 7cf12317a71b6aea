"""SAC learner (twin critics, tanh-Gaussian policy, learned temperature) in fp32, fp16 or bf16.

Low precision is pure, as in Björck et al. (2021): parameters, activations, gradients, optimizer
moments, Kahan buffers and loss scales are all stored in the learner's dtype; batches are cast to
it on entry. Each of the six fixes is a switch (``SACConfig.lowp_fixes``):

* hAdam, compound loss scaling, Kahan-gradients: ``actorq.lowp.lowp_adam_update`` for each of
  the three optimizers (critic, policy, temperature), each with its own loss scale;
* softplus-fix / normal-fix: the stable tanh log-det and Gaussian log-density of the policy's
  log-probability (the naive textbook forms when off);
* Kahan-momentum: the compensated Polyak update of the target critics.

With every fix off this is naive low-precision SAC (textbook Adam with its buffers in the
dtype, eps rounding to 0 in fp16), the configuration Björck et al. show diverging. In fp32 the
fixes do not apply (see :class:`~actorq.agents.sac.config.SACConfig`).

With ``master_weights`` (supervised learning's mixed precision, Micikevicius et al. 2018, the
baseline Björck et al. compare against) every stored float is fp32 instead. Each network call
casts its parameters and inputs to the compute dtype and its outputs back to fp32, so the
networks' forward and backward passes run in fp16 while the losses, their reductions and the
policy's log-probability run in fp32, as autocast does; the gradients reach the fp32 parameters
through the casts, scaled by the dynamic loss scale.

The whole update, ``sgd_steps_per_call`` SGD steps, is one jitted function (a ``lax.scan``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from actorq.agents.replay_learner import ReplayLearner
from actorq.agents.sac.config import SACConfig
from actorq.agents.sac.networks import SACNetworks
from actorq.lowp import (
    LowpAdamConfig,
    LowpAdamState,
    LowpFixes,
    cast_tree,
    dtype_of,
    flat_lowp_adam_update,
    gaussian_log_prob,
    lowp_adam_init,
    lowp_adam_update,
    naive_gaussian_log_prob,
    naive_polyak_update,
    naive_tanh_log_det_jacobian,
    polyak_update,
    tanh_log_det_jacobian,
    value_and_scaled_grad,
)
from actorq.quantization.qat import QATSchedule

Batch = dict[str, jax.Array]
# (policy params, observations, key) -> (actions in [-1, 1], log-probabilities)
Sampler = Callable[[Any, jax.Array, jax.Array], tuple[jax.Array, jax.Array]]


class TrainingState(NamedTuple):
    """Everything the learner carries between calls; float leaves are in the learner's dtype.

    The policy and critic optimizer states hold buffers of the parameters raveled into one
    vector (``jax.flatten_util.ravel_pytree`` order): the optimizer with every fix is dozens of
    elementwise ops per leaf, and one vector instead of a dozen leaves halved the update's
    compile time (21 s -> 10 s for 32 x 32 networks in fp16 on 2 CPU cores) and its run time
    for small networks (2.2 -> 0.7 ms per SGD step).
    """

    policy_params: Any
    critic_params: Any
    target_critic_params: Any
    target_compensation: Any  # Kahan-momentum buffers (None when that fix is off)
    log_alpha: jax.Array  # scalar: log of the entropy temperature
    policy_opt_state: LowpAdamState
    critic_opt_state: LowpAdamState
    alpha_opt_state: LowpAdamState
    key: jax.Array  # uint32[2] raw PRNG key (checkpointable)
    steps: jax.Array  # int32: SGD steps taken
    skipped_steps: jax.Array  # int32: optimizer steps skipped on overflow, all three, cumulative


def sample_action(
    policy_apply: Callable,
    policy_params: Any,
    observation: jax.Array,
    key: jax.Array,
    *,
    log_std_bounds: tuple[float, float],
    softplus_fix: bool = True,
    normal_fix: bool = True,
) -> tuple[jax.Array, jax.Array]:
    """Reparameterized sample ``a = tanh(u)``, ``u ~ N(mean, exp(log_std)^2)``, and ``log pi(a|s)``.

    ``log pi(a|s) = log N(u; mean, std) - sum log(1 - tanh(u)^2)``, each term in the stable
    (fix on) or textbook (fix off) form. Computes in the dtype of the policy's outputs.
    """
    outputs = policy_apply(policy_params, observation)
    mean, log_std = jnp.split(outputs, 2, axis=-1)
    log_std = jnp.clip(log_std, *log_std_bounds)
    eps = jax.random.normal(key, mean.shape, mean.dtype)
    u = mean + jnp.exp(log_std) * eps
    log_prob = gaussian_log_prob if normal_fix else naive_gaussian_log_prob
    log_det = tanh_log_det_jacobian if softplus_fix else naive_tanh_log_det_jacobian
    return jnp.tanh(u), log_prob(u, mean, log_std) - log_det(u)


def critic_loss(
    sample: Sampler,
    critic_apply: Callable,
    critic_params: Any,
    target_critic_params: Any,
    policy_params: Any,
    alpha: jax.Array,
    batch: Batch,
    key: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """Soft TD loss of both critics, ``sum_i mean((Q_i(s, a) - y)^2)`` (pure).

    ``y = r + discount * (min_i Q'_i(s', a') - alpha * log pi(a'|s'))`` with ``a' ~ pi(.|s')``
    and the target critics ``Q'``. Returns ``(loss, mean Q of the online critics)``.
    """
    next_action, next_log_pi = sample(policy_params, batch["next_observation"], key)
    next_q = jnp.min(critic_apply(target_critic_params, batch["next_observation"], next_action),
                     axis=-1)
    target = batch["reward"] + batch["discount"] * (next_q - alpha * next_log_pi)
    target = jax.lax.stop_gradient(target)
    q = critic_apply(critic_params, batch["observation"], batch["action"])
    loss = jnp.sum(jnp.mean(jnp.square(q - target[:, None]), axis=0))
    return loss, jnp.mean(q)


def actor_loss(
    sample: Sampler,
    critic_apply: Callable,
    policy_params: Any,
    critic_params: Any,
    alpha: jax.Array,
    batch: Batch,
    key: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """``mean(alpha * log pi(a|s) - min_i Q_i(s, a))`` with ``a ~ pi(.|s)`` (pure).

    Returns ``(loss, log pi)``; the log-probabilities feed the temperature loss.
    """
    action, log_pi = sample(policy_params, batch["observation"], key)
    q = jnp.min(critic_apply(critic_params, batch["observation"], action), axis=-1)
    return jnp.mean(alpha * log_pi - q), log_pi


def temperature_loss(log_alpha: jax.Array, log_pi: jax.Array, target_entropy: float) -> jax.Array:
    """``-mean(log_alpha * (log pi + target_entropy))``: raises alpha while the policy's entropy
    is below the target (pure; ``log_pi`` is treated as a constant)."""
    log_pi = jax.lax.stop_gradient(log_pi)
    return -jnp.mean(log_alpha * (log_pi + jnp.asarray(target_entropy, log_pi.dtype)))


def _any_nonfinite(*trees: Any) -> jax.Array:
    leaves = [jnp.any(~jnp.isfinite(x)) for x in jax.tree.leaves(trees)
              if jnp.issubdtype(x.dtype, jnp.floating)]
    return jnp.any(jnp.stack(leaves))


class SACLearner(ReplayLearner):
    """SAC learner sampling from an iterator of batches, training in ``config.precision``.

    Args:
      networks: the policy/critic modules.
      config: hyperparameters, precision and fixes.
      batches: yields dicts with ``observation, action, reward, discount, next_observation``
        arrays of leading shape ``[sgd_steps_per_call, batch_size]``.
      seed: initialisation (and sampling) seed.

    Each :meth:`step` runs ``sgd_steps_per_call`` SGD steps. Its metrics: ``critic_loss``,
    ``actor_loss``, ``alpha_loss``, ``alpha``, ``entropy`` (``-mean log pi``) and ``q_mean`` are
    means over the call's steps; ``loss_scale`` (the critic's; the policy's and temperature's as
    ``actor_``/``alpha_loss_scale``) after it; ``skipped_steps`` counts overflow-skipped optimizer
    steps since the start; ``nonfinite`` is 1 when any parameter is NaN/inf.
    """

    state_type = TrainingState

    def __init__(
        self,
        networks: SACNetworks,
        config: SACConfig,
        batches: Iterator[Batch],
        seed: int,
    ) -> None:
        self._networks = networks
        self._config = config
        self._batches = batches
        # Storage (parameters, optimizer state) and compute dtypes: the same unless master_weights.
        self._compute_dtype = dtype_of(config.precision)
        self._dtype = jnp.dtype(jnp.float32) if config.master_weights else self._compute_dtype
        self._fixes = LowpFixes.from_names(config.fix_names)
        self._qat = QATSchedule(config.qat_bits, config.qat_delay_steps)
        self._target_entropy = (
            -float(networks.action_size) if config.target_entropy is None
            else float(config.target_entropy)
        )

        def adam(learning_rate: float) -> LowpAdamConfig:
            return LowpAdamConfig.from_fixes(
                self._fixes,
                learning_rate=learning_rate,
                init_scale=config.loss_scale_init,
                increase_every=config.loss_scale_increase_every,
            )

        self._policy_adam = adam(config.policy_learning_rate)
        self._critic_adam = adam(config.critic_learning_rate)
        self._alpha_adam = adam(config.alpha_learning_rate)

        init_key, sample_key = jax.random.split(jax.random.PRNGKey(seed))
        policy_params, critic_params = cast_tree(networks.init(init_key), self._dtype)
        log_alpha = jnp.asarray(math.log(config.initial_temperature), self._dtype)
        self._state = TrainingState(
            policy_params=policy_params,
            critic_params=critic_params,
            target_critic_params=critic_params,
            target_compensation=(
                jax.tree.map(jnp.zeros_like, critic_params) if self._fixes.kahan_momentum
                else None
            ),
            log_alpha=log_alpha,
            policy_opt_state=lowp_adam_init(ravel_pytree(policy_params)[0], self._policy_adam),
            critic_opt_state=lowp_adam_init(ravel_pytree(critic_params)[0], self._critic_adam),
            alpha_opt_state=lowp_adam_init(log_alpha, self._alpha_adam),
            key=sample_key,
            steps=jnp.zeros((), jnp.int32),
            skipped_steps=jnp.zeros((), jnp.int32),
        )
        self._update_plain = jax.jit(functools.partial(self._update, networks.policy))
        self._update_qat = (
            jax.jit(functools.partial(self._update, networks.qat_policy))
            if networks.qat_policy is not None
            else None
        )
        self._steps = 0

    def _in_compute_dtype(self, apply: Callable) -> Callable:
        """``apply`` run in the compute dtype, its outputs in the storage dtype (a no-op unless
        master_weights: then the casts are inside the differentiated function)."""
        if self._compute_dtype == self._dtype:
            return apply
        compute, storage = self._compute_dtype, self._dtype
        return lambda params, *inputs: cast_tree(
            apply(cast_tree(params, compute), *cast_tree(inputs, compute)), storage)

    def _sampler(self, policy_apply: Callable) -> Sampler:
        return functools.partial(
            sample_action,
            self._in_compute_dtype(policy_apply),
            log_std_bounds=(self._config.log_std_min, self._config.log_std_max),
            # Where the log-probability runs in fp32 (an fp32 learner, or master_weights) it
            # takes the stable forms, as fp32 SAC implementations do.
            softplus_fix=self._fixes.softplus_fix or self._dtype == jnp.float32,
            normal_fix=self._fixes.normal_fix or self._dtype == jnp.float32,
        )

    def _update(self, policy, state: TrainingState, batches: Batch):
        config, fixes = self._config, self._fixes
        critic_apply = self._in_compute_dtype(self._networks.critic.apply)
        # QAT trains the policy the actors will run quantized, so it shapes the actor loss; the
        # critic's target keeps the unquantized policy (as D4PG's target policy does).
        target_sample = self._sampler(self._networks.policy.apply)
        online_sample = self._sampler(policy.apply)
        batches = cast_tree(batches, self._dtype)

        def one_step(state: TrainingState, batch: Batch):
            key, critic_key, actor_key = jax.random.split(state.key, 3)
            alpha = jnp.exp(state.log_alpha).astype(self._dtype)

            c_loss, q_mean, c_grads = value_and_scaled_grad(
                lambda p: critic_loss(target_sample, critic_apply, p, state.target_critic_params,
                                      state.policy_params, alpha, batch, critic_key),
                state.critic_params, state.critic_opt_state.loss_scale,
            )
            critic_params, critic_opt, c_info = flat_lowp_adam_update(
                c_grads, state.critic_opt_state, state.critic_params, self._critic_adam
            )

            a_loss, log_pi, a_grads = value_and_scaled_grad(
                lambda p: actor_loss(online_sample, critic_apply, p, critic_params, alpha, batch,
                                     actor_key),
                state.policy_params, state.policy_opt_state.loss_scale,
            )
            policy_params, policy_opt, a_info = flat_lowp_adam_update(
                a_grads, state.policy_opt_state, state.policy_params, self._policy_adam
            )

            t_loss, _, t_grads = value_and_scaled_grad(
                lambda la: (temperature_loss(la.astype(self._dtype), log_pi,
                                             self._target_entropy), None),
                state.log_alpha, state.alpha_opt_state.loss_scale,
            )
            log_alpha, alpha_opt, t_info = lowp_adam_update(
                t_grads, state.alpha_opt_state, state.log_alpha, self._alpha_adam
            )

            if fixes.kahan_momentum:
                target, compensation = polyak_update(
                    state.target_critic_params, critic_params, config.tau,
                    state.target_compensation,
                )
            else:
                target = naive_polyak_update(state.target_critic_params, critic_params, config.tau)
                compensation = state.target_compensation
            skipped = sum(i.skipped.astype(jnp.int32) for i in (c_info, a_info, t_info))
            new_state = TrainingState(
                policy_params=policy_params,
                critic_params=critic_params,
                target_critic_params=target,
                target_compensation=compensation,
                log_alpha=log_alpha,
                policy_opt_state=policy_opt,
                critic_opt_state=critic_opt,
                alpha_opt_state=alpha_opt,
                key=key,
                steps=state.steps + 1,
                skipped_steps=state.skipped_steps + skipped,
            )
            metrics = {
                "critic_loss": c_loss,
                "actor_loss": a_loss,
                "alpha_loss": t_loss,
                "alpha": alpha,
                "entropy": -jnp.mean(log_pi),
                "q_mean": q_mean,
            }
            return new_state, jax.tree.map(lambda m: m.astype(jnp.float32), metrics)

        state, metrics = jax.lax.scan(one_step, state, batches)
        metrics = jax.tree.map(jnp.mean, metrics)
        metrics.update(
            loss_scale=state.critic_opt_state.loss_scale.astype(jnp.float32),
            actor_loss_scale=state.policy_opt_state.loss_scale.astype(jnp.float32),
            alpha_loss_scale=state.alpha_opt_state.loss_scale.astype(jnp.float32),
            skipped_steps=state.skipped_steps,
            nonfinite=_any_nonfinite(state.policy_params, state.critic_params,
                                     state.target_critic_params, state.log_alpha),
        )
        return state, metrics

    def policy_params(self) -> Any:
        """The policy parameters as float32 (what the quantizers and actors take)."""
        return cast_tree(self._state.policy_params, jnp.float32)
