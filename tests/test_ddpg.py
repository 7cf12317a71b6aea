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


def test_sgd_steps_per_call_must_be_a_multiple_of_policy_frequency():
    with pytest.raises(ValueError, match="sgd_steps_per_call=3 must be a multiple of "
                                         "learner.policy_frequency=2"):
        DDPGConfig(sgd_steps_per_call=3, policy_frequency=2)


def _batches(steps: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"observation": rng.standard_normal((steps, 5, 3)).astype(np.float32),
            "action": rng.uniform(-1, 1, (steps, 5, 2)).astype(np.float32),
            "reward": rng.standard_normal((steps, 5)).astype(np.float32),
            "discount": np.full((steps, 5), 0.9, np.float32),
            "next_observation": rng.standard_normal((steps, 5, 3)).astype(np.float32)}


def _reference_update(networks, config: DDPGConfig, batches) -> dict:
    """CleanRL's loop, one SGD step at a time: the critic every step; on every policy_frequency-th
    step the policy (against the critic just updated), then both targets."""
    import optax

    from actorq.agents.ddpg.learning import critic_loss

    policy, critic = networks.init(jax.random.key(0))
    target_policy, target_critic = policy, critic
    policy_opt, critic_opt = optax.adam(config.policy_learning_rate), optax.adam(
        config.critic_learning_rate)
    policy_state, critic_state = policy_opt.init(policy), critic_opt.init(critic)
    preactivation = networks.policy.clone(output_activation="none")
    for step in range(len(batches["reward"])):
        batch = {k: v[step] for k, v in batches.items()}
        grads = jax.grad(critic_loss, argnums=2)(networks.policy.apply, networks.critic.apply,
                                                 critic, target_policy, target_critic, batch)
        updates, critic_state = critic_opt.update(grads, critic_state)
        critic = optax.apply_updates(critic, updates)
        if (step + 1) % config.policy_frequency == 0:
            grads = jax.grad(policy_loss, argnums=2)(preactivation.apply, networks.critic.apply,
                                                     policy, critic, batch)
            updates, policy_state = policy_opt.update(grads, policy_state)
            policy = optax.apply_updates(policy, updates)
            target_policy = optax.incremental_update(policy, target_policy, config.tau)
            target_critic = optax.incremental_update(critic, target_critic, config.tau)
    return {"policy_params": policy, "critic_params": critic,
            "target_policy_params": target_policy, "target_critic_params": target_critic}


@pytest.mark.parametrize("sgd_steps_per_call", [2, 4])
def test_grouped_update_follows_cleanrl_step_by_step(sgd_steps_per_call):
    """The learner's scan over groups of policy_frequency critic steps (each then one policy
    step) gives CleanRL's step-by-step result, however the 4 steps are split into calls."""
    from actorq.agents.ddpg.learning import DDPGLearner

    config = DDPGConfig(policy_hidden_sizes=(8,), critic_hidden_sizes=(8,), batch_size=5,
                        policy_frequency=2, sgd_steps_per_call=sgd_steps_per_call, tau=0.1,
                        policy_learning_rate=1e-2, critic_learning_rate=1e-2)
    networks = make_networks(config, 3, 2)
    batches = _batches(4)
    calls = [{k: v[i:i + sgd_steps_per_call] for k, v in batches.items()}
             for i in range(0, 4, sgd_steps_per_call)]
    learner = DDPGLearner(networks, config, iter(calls), seed=0)
    for _ in calls:
        learner.step()
    assert learner.steps == 4
    expected = _reference_update(networks, config, batches)
    state = learner.state()
    for name, tree in expected.items():
        jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5,
                                                                        atol=1e-6),
                               state[name], tree)
    # The policy moved (twice): the test would pass vacuously on a frozen policy otherwise.
    initial_policy, _ = networks.init(jax.random.key(0))
    moved = jax.tree_util.tree_map(lambda a, b: float(np.abs(a - b).max()),
                                   state["policy_params"], initial_policy)
    assert max(jax.tree_util.tree_leaves(moved)) > 1e-4


def _recording_builder(reward_floor):
    from actorq.agents.ddpg.builder import DDPGBuilder
    from actorq.replay.specs import ArraySpec

    spec = {"observation": ArraySpec((3,), np.float32), "action": ArraySpec((2,), np.float32)}
    items = []
    builder = DDPGBuilder(DDPGConfig(reward_floor=reward_floor), spec)
    return builder.make_adder(items.append), items


@pytest.mark.parametrize("floor, expected", [(None, [0.5, -100.0, -3.0]),
                                             (-10.0, [0.5, -10.0, -3.0])])
def test_reward_floor_raises_only_the_rewards_below_it(floor, expected):
    import dm_env

    adder, items = _recording_builder(floor)
    adder.add_first(dm_env.restart(np.zeros(3, np.float32)))
    action = np.zeros(2, np.float32)
    adder.add(action, dm_env.transition(0.5, np.ones(3, np.float32)))
    adder.add(action, dm_env.transition(-100.0, np.ones(3, np.float32)))
    adder.add(action, dm_env.termination(-3.0, np.ones(3, np.float32)))
    assert [float(item["reward"]) for item in items] == expected


def test_bipedalwalker_preset_floors_rewards_decays_over_its_budget_and_a_nan_floor_is_refused():
    from configs.ddpg_actorq import get_config

    config = get_config("bipedalwalker")
    assert config.learner.reward_floor == -10.0
    # The rates decay to 0 over the budget, and the replay keeps every transition.
    assert config.learner.learning_rate_decay_steps == config.max_actor_steps
    assert config.replay.max_size >= config.max_actor_steps
    assert get_config("halfcheetah").learner.learning_rate_decay_steps == 0
    assert get_config("halfcheetah").learner.reward_floor is None
    with pytest.raises(ValueError, match="reward_floor"):
        DDPGConfig(reward_floor=float("nan"))


def test_critic_layer_norm_normalizes_every_hidden_layer_and_leaves_the_policy_alone():
    plain = make_networks(DDPGConfig(policy_hidden_sizes=(8,), critic_hidden_sizes=(16, 8)), 3, 2)
    normed = make_networks(DDPGConfig(policy_hidden_sizes=(8,), critic_hidden_sizes=(16, 8),
                                      critic_layer_norm=True), 3, 2)
    (policy_a, critic_a), (policy_b, critic_b) = plain.init(jax.random.key(0)), normed.init(
        jax.random.key(0))
    assert jax.tree_util.tree_structure(policy_a) == jax.tree_util.tree_structure(policy_b)
    assert set(critic_a["params"]) == {"q"}  # unchanged: older checkpoints still restore
    assert set(critic_b["params"]) == {"dense_0", "norm_0", "dense_1", "norm_1", "q_out"}
    obs = jax.random.normal(jax.random.key(1), (5, 3))
    act = jnp.tanh(jax.random.normal(jax.random.key(2), (5, 2)))
    q = normed.critic.apply(critic_b, obs, act)
    # LayerNorm makes a hidden layer's output blind to the scale of its pre-activations: a
    # first layer 10x larger gives the same Q (it would not without the norm).
    scaled = jax.tree_util.tree_map(lambda x: x, critic_b)
    scaled["params"]["dense_0"] = jax.tree_util.tree_map(lambda x: 10.0 * x,
                                                         critic_b["params"]["dense_0"])
    np.testing.assert_allclose(normed.critic.apply(scaled, obs, act), q, rtol=1e-4, atol=1e-5)
    scaled_plain = jax.tree_util.tree_map(lambda x: x, critic_a)
    scaled_plain["params"]["q"]["layer_0"] = jax.tree_util.tree_map(
        lambda x: 10.0 * x, critic_a["params"]["q"]["layer_0"])
    assert not np.allclose(plain.critic.apply(scaled_plain, obs, act),
                           plain.critic.apply(critic_a, obs, act))


def test_learning_rate_decay_stops_both_networks_at_the_end_of_the_decay():
    """With a linear decay over 4 critic steps (2 policy steps), the first call moves both
    networks and a call after the decay has ended moves neither; without decay it still moves."""
    from actorq.agents.ddpg.learning import DDPGLearner

    def run(decay_steps: int):
        config = DDPGConfig(policy_hidden_sizes=(8,), critic_hidden_sizes=(8,), batch_size=5,
                            policy_frequency=2, sgd_steps_per_call=4, tau=0.1,
                            policy_learning_rate=1e-2, critic_learning_rate=1e-2,
                            learning_rate_decay_steps=decay_steps)
        batches = _batches(12, seed=1)
        calls = [{k: v[i:i + 4] for k, v in batches.items()} for i in range(0, 12, 4)]
        learner = DDPGLearner(make_networks(config, 3, 2), config, iter(calls), seed=0)
        states = [learner.state()]
        for _ in calls:
            learner.step()
            states.append(learner.state())
        return states

    def moved(a, b, name):
        diffs = jax.tree_util.tree_map(lambda x, y: float(np.abs(x - y).max()), a[name], b[name])
        return max(jax.tree_util.tree_leaves(diffs))

    decayed, constant = run(4), run(0)  # states before the first call and after each call
    for name in ("critic_params", "policy_params"):
        # The first call's steps ran at rates 1e-2 .. 2.5e-3: a move.
        assert moved(decayed[0], decayed[1], name) > 1e-4
        assert moved(decayed[1], decayed[2], name) == 0.0  # learning rate 0 from step 4 on
        assert moved(decayed[2], decayed[3], name) == 0.0
        assert moved(constant[2], constant[3], name) > 1e-4


def test_learning_rate_decay_is_checked_and_old_runs_match_it_off():
    from actorq.analysis.runs import ADDED_FIELDS_OFF

    with pytest.raises(ValueError, match="learning_rate_decay_steps"):
        DDPGConfig(learning_rate_decay_steps=-1)
    assert ADDED_FIELDS_OFF["learner.learning_rate_decay_steps"] == 0
