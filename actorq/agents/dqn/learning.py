"""DQN learner: (double) Q-learning with a Huber loss (rlax), n-step targets, optional PER.

``sgd_steps_per_call`` SGD steps run inside one jitted ``lax.scan``. ``config.precision`` fp16 or
bf16 trains in that dtype throughout (parameters, activations, gradients, optimizer state) with
Björck et al.'s Adam (``actorq.lowp``: hAdam, compound loss scaling, Kahan-gradients, each
switchable); the published policy is cast back to float32 for the quantizers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import rlax

from actorq.agents.dqn.config import DQNConfig
from actorq.agents.dqn.networks import DQNNetworks
from actorq.agents.transitions import LEARNER_FIELDS, sample_policy_lag
from actorq.lowp import (
    LowpAdamConfig,
    LowpFixes,
    cast_tree,
    dtype_of,
    flat_lowp_adam_update,
    lowp_adam_init,
    value_and_scaled_grad,
)
from actorq.networks.conv import scan_without_loop
from actorq.quantization.qat import QATSchedule
from actorq.replay.samplers import importance_weights


class TrainingState(NamedTuple):
    params: Any
    target_params: Any
    opt_state: Any
    steps: jax.Array


def q_loss(
    q_apply: Callable,
    target_apply: Callable,
    huber_delta: float,
    params: Any,
    target_params: Any,
    batch: dict[str, jax.Array],
    weights: jax.Array,
    double_q: bool = True,
) -> tuple[jax.Array, jax.Array]:
    """Importance-weighted Huber Q-learning loss; returns (loss, |td error| per item) (pure).

    ``double_q``: the online network picks the bootstrap action and the target network scores
    it (van Hasselt et al.); off: the target network's max, as in the original DQN.
    """
    q_tm1 = q_apply(params, batch["observation"])
    q_t_value = target_apply(target_params, batch["next_observation"])
    action = batch["action"].astype(jnp.int32)
    # The adder's discount already holds gamma^m times the env discounts.
    if double_q:
        q_t_selector = q_apply(params, batch["next_observation"])
        td = jax.vmap(rlax.double_q_learning)(
            q_tm1, action, batch["reward"], batch["discount"], q_t_value, q_t_selector)
    else:
        td = jax.vmap(rlax.q_learning)(
            q_tm1, action, batch["reward"], batch["discount"], q_t_value)
    loss = jnp.mean(weights * rlax.huber_loss(td, huber_delta))
    return loss, jnp.abs(td)


class DQNLearner:
    """Full-precision double-DQN learner.

    Args:
      networks: the Q-network (and QAT twin).
      config: hyperparameters.
      batches: dicts of ``[sgd_steps_per_call, batch_size, ...]`` arrays (with ``keys`` and
        ``probabilities`` when prioritized).
      seed: initialisation seed.
      update_priorities: called with (keys, priorities) after each call when prioritized.
      replay_size: returns the table's current size (for importance weights).
    """

    def __init__(
        self,
        networks: DQNNetworks,
        config: DQNConfig,
        batches: Iterator[dict[str, np.ndarray]],
        seed: int,
        update_priorities: Callable[[np.ndarray, np.ndarray], None] | None = None,
        replay_size: Callable[[], int] | None = None,
    ) -> None:
        self._networks = networks
        self._config = config
        self._batches = batches
        self._update_priorities = update_priorities
        self._replay_size = replay_size
        self._qat = QATSchedule(config.qat_bits, config.qat_delay_steps)
        self._optimizer = optax.chain(
            optax.clip_by_global_norm(config.max_gradient_norm),
            optax.adam(config.learning_rate_schedule, eps=config.adam_epsilon),
        )
        self._dtype = dtype_of(config.precision)
        self._lowp = config.precision != "fp32"
        self._lowp_adam = LowpAdamConfig.from_fixes(
            LowpFixes.from_names(config.fix_names), learning_rate=config.learning_rate,
            eps=config.adam_epsilon, init_scale=config.loss_scale_init,
            increase_every=config.loss_scale_increase_every,
        )
        params = cast_tree(networks.init(jax.random.key(seed)), self._dtype)
        if self._lowp:
            from jax.flatten_util import ravel_pytree

            opt_state = lowp_adam_init(ravel_pytree(params)[0], self._lowp_adam)
        else:
            opt_state = self._optimizer.init(params)
        self._state = TrainingState(params, params, opt_state, jnp.zeros((), jnp.int32))
        self._update_fp32 = jax.jit(functools.partial(self._update, networks.q_network))
        self._update_qat = (
            jax.jit(functools.partial(self._update, networks.qat_q_network))
            if networks.qat_q_network is not None
            else None
        )
        self._steps = 0

    def _update(self, q_network, state: TrainingState, batches, weights):
        target_apply = self._networks.q_network.apply

        if self._lowp:  # the whole step in the learner's dtype (the action index stays int)
            batches = {k: v if k == "action" else v.astype(self._dtype)
                       for k, v in batches.items()}
            weights = weights.astype(self._dtype)

        def one_step(state: TrainingState, inputs):
            batch, w = inputs

            def loss_fn(p):
                return q_loss(q_network.apply, target_apply, self._config.huber_delta,
                              p, state.target_params, batch, w, self._config.double_q)

            if self._lowp:
                loss, td_abs, grads = value_and_scaled_grad(
                    loss_fn, state.params, state.opt_state.loss_scale)
                params, opt_state, _ = flat_lowp_adam_update(
                    grads, state.opt_state, state.params, self._lowp_adam)
            else:
                (loss, td_abs), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
                updates, opt_state = self._optimizer.update(grads, state.opt_state,
                                                            state.params)
                params = optax.apply_updates(state.params, updates)
            steps = state.steps + 1
            if self._config.target_update_tau > 0:
                target = optax.incremental_update(
                    params, state.target_params, self._config.target_update_tau)
            else:
                target = optax.periodic_update(
                    params, state.target_params, steps, self._config.target_update_period)
            return TrainingState(params, target, opt_state, steps), (loss, td_abs)

        # No loop for conv networks: XLA:CPU runs convolutions inside a loop body several times
        # slower (docs/pixels.md).
        state, (losses, td_abs) = scan_without_loop(
            one_step, state, (batches, weights),
            unrolled=self._networks.observation_shape is not None)
        return state, jnp.mean(losses.astype(jnp.float32)), td_abs.astype(jnp.float32)

    @property
    def steps(self) -> int:
        return self._steps

    def step(self) -> dict[str, float]:
        raw = next(self._batches)
        batch = {k: raw[k] for k in LEARNER_FIELDS}
        calls, size = raw["reward"].shape
        if self._config.prioritized and ("table_size" in raw or self._replay_size is not None):
            # The size at sample time, not now: the table may have changed (or, at warm-up, be
            # empty) since.
            table_size = int(raw["table_size"]) if "table_size" in raw else self._replay_size()
            weights = importance_weights(
                raw["probabilities"].reshape(-1), table_size, self._config.importance_beta
            ).reshape(calls, size).astype(np.float32)
        else:
            weights = np.ones((calls, size), np.float32)
        qat_on = self._update_qat is not None and self._qat.active(self._steps)
        update = self._update_qat if qat_on else self._update_fp32
        self._state, loss, td_abs = update(self._state, batch, weights)
        if self._config.prioritized and self._update_priorities is not None:
            priorities = np.asarray(td_abs).reshape(-1) + self._config.priority_epsilon
            self._update_priorities(raw["keys"].reshape(-1), priorities)
        self._steps += calls
        out = {"loss": float(loss), "qat_active": float(qat_on)}
        if self._lowp:
            out["loss_scale"] = float(self._state.opt_state.loss_scale)
        return {**out, **sample_policy_lag(self._steps, raw)}

    def policy_params(self) -> Any:
        """The Q-network's parameters as float32 (what the quantizers and actors take)."""
        return cast_tree(self._state.params, jnp.float32)

    def state(self) -> Any:
        return self._state._asdict()

    def restore(self, state: Any) -> None:
        self._state = TrainingState(**state)
        self._steps = int(np.asarray(self._state.steps))
