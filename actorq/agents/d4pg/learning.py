"""D4PG learner: distributional critic (rlax categorical TD) + deterministic policy gradient.

The whole update, ``sgd_steps_per_call`` SGD steps, is one jitted function (a ``lax.scan``).
``config.precision`` fp16 or bf16 trains in that dtype throughout (parameters, activations,
gradients, optimizer state) with Björck et al.'s Adam (``actorq.lowp``: hAdam, compound loss
scaling, Kahan-gradients, each switchable); the published policy is cast back to float32.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
import rlax

from actorq.agents.d4pg.config import D4PGConfig
from actorq.agents.d4pg.networks import D4PGNetworks, atoms
from actorq.agents.replay_learner import ReplayLearner
from actorq.lowp import (
    LowpAdamConfig,
    LowpFixes,
    cast_tree,
    dtype_of,
    flat_lowp_adam_update,
    lowp_adam_init,
    value_and_scaled_grad,
)
from actorq.quantization.qat import QATSchedule


class TrainingState(NamedTuple):
    policy_params: Any
    critic_params: Any
    target_policy_params: Any
    target_critic_params: Any
    policy_opt_state: Any
    critic_opt_state: Any
    steps: jax.Array


Batch = dict[str, jax.Array]


def critic_loss(
    target_policy_apply: Callable,
    critic_apply: Callable,
    support: jax.Array,
    critic_params: Any,
    target_policy_params: Any,
    target_critic_params: Any,
    batch: Batch,
) -> jax.Array:
    """Categorical TD towards the target networks' distribution at the next state (pure)."""
    q_tm1 = critic_apply(critic_params, batch["observation"], batch["action"])
    next_act = target_policy_apply(target_policy_params, batch["next_observation"])
    q_t = critic_apply(target_critic_params, batch["next_observation"], next_act)
    loss = jax.vmap(rlax.categorical_td_learning, in_axes=(None, 0, 0, 0, None, 0))(
        support, q_tm1, batch["reward"], batch["discount"], support, q_t
    )
    return jnp.mean(loss)


def policy_loss(
    policy_apply: Callable,
    critic_apply: Callable,
    support: jax.Array,
    dqda_clipping: float | None,
    policy_params: Any,
    critic_params: Any,
    batch: Batch,
) -> jax.Array:
    """Deterministic policy gradient: follow dQ/da of the critic's mean (pure)."""

    def q_mean(a: jax.Array, o: jax.Array) -> jax.Array:
        logits = critic_apply(critic_params, o[None], a[None])[0]
        return jnp.sum(jax.nn.softmax(logits) * support)

    obs = batch["observation"]
    dpg_action = policy_apply(policy_params, obs)
    dqda = jax.vmap(jax.grad(q_mean))(dpg_action, obs)
    loss = jax.vmap(lambda a, g: rlax.dpg_loss(a, g, dqda_clipping))(dpg_action, dqda)
    return jnp.mean(loss)


def d4pg_losses(
    policy_apply: Callable,
    critic_apply: Callable,
    support: jax.Array,
    dqda_clipping: float | None,
    policy_params: Any,
    critic_params: Any,
    target_policy_params: Any,
    target_critic_params: Any,
    batch: Batch,
) -> tuple[jax.Array, jax.Array]:
    """(critic_loss, policy_loss) on one batch of n-step transitions (pure)."""
    return (
        critic_loss(policy_apply, critic_apply, support, critic_params, target_policy_params,
                    target_critic_params, batch),
        policy_loss(policy_apply, critic_apply, support, dqda_clipping, policy_params,
                    critic_params, batch),
    )


class D4PGLearner(ReplayLearner):
    """Full-precision D4PG learner sampling from an iterator of batches.

    Args:
      networks: the policy/critic modules.
      config: hyperparameters.
      batches: yields dicts with ``observation, action, reward, discount, next_observation``
        arrays of leading shape ``[sgd_steps_per_call, batch_size]``.
      seed: initialisation seed.
    """

    state_type = TrainingState

    def __init__(
        self,
        networks: D4PGNetworks,
        config: D4PGConfig,
        batches: Iterator[Batch],
        seed: int,
    ) -> None:
        self._networks = networks
        self._config = config
        self._batches = batches
        self._qat = QATSchedule(config.qat_bits, config.qat_delay_steps)
        self._policy_opt = optax.adam(config.policy_learning_rate)
        self._critic_opt = optax.adam(config.critic_learning_rate)
        self._dtype = dtype_of(config.precision)
        self._lowp = config.precision != "fp32"
        fixes = LowpFixes.from_names(config.fix_names)

        def lowp_adam(learning_rate: float) -> LowpAdamConfig:
            return LowpAdamConfig.from_fixes(
                fixes, learning_rate=learning_rate, init_scale=config.loss_scale_init,
                increase_every=config.loss_scale_increase_every)

        self._policy_lowp = lowp_adam(config.policy_learning_rate)
        self._critic_lowp = lowp_adam(config.critic_learning_rate)
        policy_params, critic_params = cast_tree(networks.init(jax.random.key(seed)),
                                                 self._dtype)
        if self._lowp:
            from jax.flatten_util import ravel_pytree

            policy_opt_state = lowp_adam_init(ravel_pytree(policy_params)[0], self._policy_lowp)
            critic_opt_state = lowp_adam_init(ravel_pytree(critic_params)[0], self._critic_lowp)
        else:
            policy_opt_state = self._policy_opt.init(policy_params)
            critic_opt_state = self._critic_opt.init(critic_params)
        self._state = TrainingState(
            policy_params=policy_params,
            critic_params=critic_params,
            target_policy_params=policy_params,
            target_critic_params=critic_params,
            policy_opt_state=policy_opt_state,
            critic_opt_state=critic_opt_state,
            steps=jnp.zeros((), jnp.int32),
        )
        self._update_plain = jax.jit(functools.partial(self._update, networks.policy))
        self._update_qat = (
            jax.jit(functools.partial(self._update, networks.qat_policy))
            if networks.qat_policy is not None
            else None
        )
        self._steps = 0

    def _update(self, policy, state: TrainingState, batches: Batch):
        support = jnp.asarray(atoms(self._config), self._dtype)
        batches = cast_tree(batches, self._dtype)
        critic_apply = self._networks.critic.apply
        # The target policy stays fp32 (it only shapes the critic's target); QAT affects the
        # online policy whose gradients train the weights that actors will run quantized.
        target_apply = self._networks.policy.apply

        def one_step(state: TrainingState, batch: Batch):
            # Each gradient needs only its own loss; computing both per gradient would trace
            # the other loss twice inside the hot update.
            def critic_fn(p):
                return critic_loss(target_apply, critic_apply, support, p,
                                   state.target_policy_params, state.target_critic_params,
                                   batch), None

            def policy_fn(p):
                return policy_loss(policy.apply, critic_apply, support,
                                   self._config.dqda_clipping, p, state.critic_params, batch), None

            if self._lowp:
                c_loss, _, critic_grads = value_and_scaled_grad(
                    critic_fn, state.critic_params, state.critic_opt_state.loss_scale)
                p_loss, _, policy_grads = value_and_scaled_grad(
                    policy_fn, state.policy_params, state.policy_opt_state.loss_scale)
                critic_params, critic_opt_state, _ = flat_lowp_adam_update(
                    critic_grads, state.critic_opt_state, state.critic_params,
                    self._critic_lowp)
                policy_params, policy_opt_state, _ = flat_lowp_adam_update(
                    policy_grads, state.policy_opt_state, state.policy_params,
                    self._policy_lowp)
            else:
                (c_loss, _), critic_grads = jax.value_and_grad(critic_fn, has_aux=True)(
                    state.critic_params)
                (p_loss, _), policy_grads = jax.value_and_grad(policy_fn, has_aux=True)(
                    state.policy_params)
                critic_updates, critic_opt_state = self._critic_opt.update(
                    critic_grads, state.critic_opt_state
                )
                policy_updates, policy_opt_state = self._policy_opt.update(
                    policy_grads, state.policy_opt_state
                )
                critic_params = optax.apply_updates(state.critic_params, critic_updates)
                policy_params = optax.apply_updates(state.policy_params, policy_updates)
            steps = state.steps + 1
            target_policy = optax.periodic_update(
                policy_params, state.target_policy_params, steps,
                self._config.target_update_period,
            )
            target_critic = optax.periodic_update(
                critic_params, state.target_critic_params, steps,
                self._config.target_update_period,
            )
            new_state = TrainingState(
                policy_params, critic_params, target_policy, target_critic,
                policy_opt_state, critic_opt_state, steps,
            )
            return new_state, {"critic_loss": c_loss.astype(jnp.float32),
                               "policy_loss": p_loss.astype(jnp.float32)}

        state, metrics = jax.lax.scan(one_step, state, batches)
        metrics = jax.tree_util.tree_map(jnp.mean, metrics)
        if self._lowp:
            metrics["loss_scale"] = state.critic_opt_state.loss_scale.astype(jnp.float32)
            metrics["policy_loss_scale"] = state.policy_opt_state.loss_scale.astype(jnp.float32)
        return state, metrics

    def policy_params(self) -> Any:
        """The policy parameters as float32 (what the quantizers and actors take)."""
        return cast_tree(self._state.policy_params, jnp.float32)
