"""DDPG's policy loss: the deterministic policy gradient and the pre-tanh penalty."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from actorq.agents.ddpg.config import DDPGConfig
from actorq.agents.ddpg.learning import policy_loss
from actorq.agents.ddpg.networks import make_networks


def _saturated_policy(scale: float):
    """A 2 -> 1 DDPG policy whose output bias is ``scale`` (tanh of it is 1.0 in fp32 at 20)."""
    networks = make_networks(DDPGConfig(policy_hidden_sizes=(8,), critic_hidden_sizes=(8,)), 2, 1)
    policy_params, critic_params = networks.init(jax.random.key(0))
    policy_params = jax.tree_util.tree_map(jnp.zeros_like, policy_params)
    policy_params["params"]["layer_1"]["bias"] = jnp.full((1,), scale, jnp.float32)
    return networks, policy_params, critic_params


def _grad(networks, policy_params, critic_params, penalty: float):
    preactivation = networks.policy.clone(output_activation="none")
    batch = {"observation": jnp.ones((4, 2), jnp.float32)}
    return jax.grad(lambda p: policy_loss(preactivation.apply, networks.critic.apply, p,
                                          critic_params, batch, penalty))(policy_params)


def test_saturated_tanh_has_no_policy_gradient_without_the_penalty():
    networks, policy_params, critic_params = _saturated_policy(20.0)
    assert float(jnp.tanh(jnp.float32(20.0))) == 1.0
    grads = _grad(networks, policy_params, critic_params, 0.0)
    assert all(float(jnp.abs(g).max()) == 0.0 for g in jax.tree_util.tree_leaves(grads))


@pytest.mark.parametrize("penalty", [1e-3, 1e-2])
def test_penalty_pulls_a_saturated_preactivation_back(penalty):
    networks, policy_params, critic_params = _saturated_policy(20.0)
    grads = _grad(networks, policy_params, critic_params, penalty)
    # d/db penalty * mean(x^2) with x = b = 20 everywhere: 2 * penalty * 20; gradient descent
    # then lowers the bias towards the region where tanh has a gradient.
    np.testing.assert_allclose(grads["params"]["layer_1"]["bias"], [2 * penalty * 20.0],
                               rtol=1e-5)


def test_penalty_free_loss_is_the_deterministic_policy_gradient():
    networks, policy_params, critic_params = _saturated_policy(0.5)
    obs = jnp.ones((4, 2), jnp.float32)
    action = networks.policy.apply(policy_params, obs)
    dqda = jax.vmap(jax.grad(lambda a, o: networks.critic.apply(critic_params, o[None],
                                                                a[None])[0]))(action, obs)
    grads = _grad(networks, policy_params, critic_params, 0.0)
    # d/db of mean over the batch of -Q(s, tanh(b)) = -mean(dQ/da) * (1 - tanh(b)^2).
    expected = -np.mean(np.asarray(dqda)) * (1 - np.tanh(0.5) ** 2)
    np.testing.assert_allclose(grads["params"]["layer_1"]["bias"], [expected], rtol=1e-4)


def test_negative_penalty_is_refused():
    with pytest.raises(ValueError, match="preactivation_penalty"):
        DDPGConfig(preactivation_penalty=-1.0)
