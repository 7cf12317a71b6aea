"""DDPG learner: TD regression of a scalar critic + deterministic policy gradient.

As in CleanRL's ``ddpg_continuous_action.py``: every SGD step updates the critic towards
``r + discount * Q_target(s', pi_target(s'))``; every ``policy_frequency`` steps the policy
follows dQ/da (plus the optional pre-tanh penalty) and both target networks move by Polyak
averaging (``tau``). The whole call (``sgd_steps_per_call`` steps, a multiple of
``policy_frequency``) is one jitted ``lax.scan`` over groups of ``policy_frequency`` critic steps,
each followed by one policy step on the group's last batch, so skipped policy steps cost nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
import rlax

from actorq.agents.ddpg.config import DDPGConfig
from actorq.agents.ddpg.networks import DDPGNetworks
from actorq.agents.replay_learner import ReplayLearner
from actorq.quantization.qat import QATSchedule

Batch = dict[str, jax.Array]


class TrainingState(NamedTuple):
    policy_params: Any
    critic_params: Any
    target_policy_params: Any
    target_critic_params: Any
    policy_opt_state: Any
    critic_opt_state: Any
    steps: jax.Array


def critic_loss(policy_apply: Callable, critic_apply: Callable, critic_params: Any,
                target_policy_params: Any, target_critic_params: Any,
                batch: Batch) -> jax.Array:
    """Mean squared TD error against the target networks (pure). ``batch["discount"]`` is the
    n-step adder's ``gamma^m * prod(d)``."""
    next_action = policy_apply(target_policy_params, batch["next_observation"])
    q_next = critic_apply(target_critic_params, batch["next_observation"], next_action)
    target = jax.lax.stop_gradient(batch["reward"] + batch["discount"] * q_next)
    q = critic_apply(critic_params, batch["observation"], batch["action"])
    return jnp.mean((q - target) ** 2)


def policy_loss(preactivation_apply: Callable, critic_apply: Callable, policy_params: Any,
                critic_params: Any, batch: Batch, preactivation_penalty: float = 0.0
                ) -> jax.Array:
    """Deterministic policy gradient: ascend Q(s, tanh(x(s))) (pure), plus
    ``preactivation_penalty * mean(x ** 2)`` on the policy's pre-tanh output ``x``."""
    obs = batch["observation"]
    preactivation = preactivation_apply(policy_params, obs)
    action = jnp.tanh(preactivation)
    dqda = jax.vmap(jax.grad(lambda a, o: critic_apply(critic_params, o[None], a[None])[0]))(
        action, obs)
    dpg = jnp.mean(jax.vmap(rlax.dpg_loss)(action, dqda))
    return dpg + preactivation_penalty * jnp.mean(preactivation ** 2)


def _learning_rate(initial: float, decay_steps: int) -> float | optax.Schedule:
    """``initial``, or a linear decay from it to 0 over ``decay_steps`` optimizer steps (0: a
    constant, with the plain Adam state, so earlier checkpoints still restore)."""
    if decay_steps <= 0:
        return initial
    return optax.linear_schedule(initial, 0.0, decay_steps)


class DDPGLearner(ReplayLearner):
    """DDPG learner sampling ``[sgd_steps_per_call, batch_size, ...]`` batches."""

    state_type = TrainingState

    def __init__(self, networks: DDPGNetworks, config: DDPGConfig, batches: Iterator[Batch],
                 seed: int) -> None:
        self._networks = networks
        self._config = config
        self._batches = batches
        self._qat = QATSchedule(config.qat_bits, config.qat_delay_steps)
        self._policy_opt = optax.adam(_learning_rate(
            config.policy_learning_rate,
            -(-config.learning_rate_decay_steps // config.policy_frequency)))
        self._critic_opt = optax.adam(_learning_rate(config.critic_learning_rate,
                                                     config.learning_rate_decay_steps))
        policy_params, critic_params = networks.init(jax.random.key(seed))
        self._state = TrainingState(
            policy_params=policy_params,
            critic_params=critic_params,
            target_policy_params=policy_params,
            target_critic_params=critic_params,
            policy_opt_state=self._policy_opt.init(policy_params),
            critic_opt_state=self._critic_opt.init(critic_params),
            steps=jnp.zeros((), jnp.int32),
        )
        self._update_plain = jax.jit(functools.partial(self._update, networks.policy))
        self._update_qat = (jax.jit(functools.partial(self._update, networks.qat_policy))
                            if networks.qat_policy is not None else None)
        self._steps = 0

    def _update(self, policy, state: TrainingState, batches: Batch):
        config = self._config
        critic_apply = self._networks.critic.apply
        # The target policy stays fp32; QAT shapes the online policy the actors will run.
        target_apply = self._networks.policy.apply
        # The same layers and parameters without the output tanh.
        preactivation = policy.clone(output_activation="none")

        def critic_step(state: TrainingState, batch: Batch):
            c_loss, critic_grads = jax.value_and_grad(
                lambda p: critic_loss(target_apply, critic_apply, p, state.target_policy_params,
                                      state.target_critic_params, batch))(state.critic_params)
            critic_updates, critic_opt_state = self._critic_opt.update(
                critic_grads, state.critic_opt_state)
            critic_params = optax.apply_updates(state.critic_params, critic_updates)
            return state._replace(critic_params=critic_params, critic_opt_state=critic_opt_state,
                                  steps=state.steps + 1), c_loss

        def policy_step(state: TrainingState, batch: Batch):
            p_loss, policy_grads = jax.value_and_grad(
                lambda p: policy_loss(preactivation.apply, critic_apply, p, state.critic_params,
                                      batch, config.preactivation_penalty))(state.policy_params)
            policy_updates, policy_opt_state = self._policy_opt.update(
                policy_grads, state.policy_opt_state)
            policy_params = optax.apply_updates(state.policy_params, policy_updates)
            return state._replace(
                policy_params=policy_params, policy_opt_state=policy_opt_state,
                target_policy_params=optax.incremental_update(
                    policy_params, state.target_policy_params, config.tau),
                target_critic_params=optax.incremental_update(
                    state.critic_params, state.target_critic_params, config.tau)), p_loss

        def one_group(state: TrainingState, group: Batch):
            state, c_losses = jax.lax.scan(critic_step, state, group)
            state, p_loss = policy_step(state, jax.tree_util.tree_map(lambda x: x[-1], group))
            return state, {"critic_loss": jnp.mean(c_losses), "policy_loss": p_loss}

        frequency = config.policy_frequency
        groups = jax.tree_util.tree_map(
            lambda x: x.reshape(x.shape[0] // frequency, frequency, *x.shape[1:]), batches)
        state, metrics = jax.lax.scan(one_group, state, groups)
        return state, jax.tree_util.tree_map(jnp.mean, metrics)

    def policy_params(self) -> Any:
        return self._state.policy_params
