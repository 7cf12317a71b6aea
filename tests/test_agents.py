"""Agent math (hand-computed cases), learner mechanics, configs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rlax

from actorq.agents.d4pg import D4PGConfig, D4PGLearner, d4pg_losses
from actorq.agents.d4pg.acting import actor_sigma, gaussian_exploration
from actorq.agents.d4pg.networks import make_networks as make_d4pg_networks
from actorq.agents.dqn import DQNConfig, q_loss
from actorq.agents.dqn.acting import actor_epsilon, epsilon_greedy
from actorq.agents.registry import agent_config
from configs import d4pg_actorq, dqn_actorq


def test_categorical_projection_hand_computed():
    # Target atoms r + gamma * z = [0.5, 1.5, 2.5] with probabilities [0.2, 0.3, 0.5] projected
    # onto the support [0, 1, 2]: 0.5 splits evenly between 0 and 1, 1.5 between 1 and 2, and
    # 2.5 is clipped onto 2.
    support = jnp.array([0.0, 1.0, 2.0])
    projected = rlax.categorical_l2_project(support + 0.5, jnp.array([0.2, 0.3, 0.5]), support)
    np.testing.assert_allclose(projected, [0.1, 0.25, 0.65], atol=1e-6)


def test_d4pg_critic_loss_is_cross_entropy_to_projected_target():
    support = jnp.array([0.0, 1.0, 2.0])
    logits_tm1 = jnp.array([[0.1, 0.2, 0.3]])
    next_logits = jnp.log(jnp.array([[0.2, 0.3, 0.5]]))

    batch = {
        "observation": jnp.zeros((1, 2)),
        "action": jnp.zeros((1, 1)),
        "reward": jnp.array([0.5]),
        "discount": jnp.array([1.0]),
        "next_observation": jnp.zeros((1, 2)),
    }

    # The "params" are just labels telling the stub critic which network is asked.
    def critic(params, obs, act):
        return logits_tm1 if params == "online" else next_logits

    critic_loss, _ = d4pg_losses(
        lambda p, o: jnp.zeros((o.shape[0], 1)), critic, support, None,
        None, "online", None, "target", batch,
    )
    target = np.array([0.1, 0.25, 0.65])
    expected = -np.sum(target * jax.nn.log_softmax(logits_tm1[0]))
    np.testing.assert_allclose(critic_loss, expected, rtol=1e-5)


def test_q_loss_hand_computed_double_and_vanilla():
    # Online Q picks action 1 at s_t; the target net values it at 3.0.
    q_values = {"obs": jnp.array([[1.0, 2.0]]), "next": jnp.array([[0.0, 5.0]])}
    target_values = jnp.array([[4.0, 3.0]])

    def q_apply(params, x):
        return q_values["obs"] if float(x[0, 0]) == 0.0 else q_values["next"]

    batch = {
        "observation": jnp.zeros((1, 1)),
        "action": jnp.array([0]),
        "reward": jnp.array([1.0]),
        "discount": jnp.array([0.5]),
        "next_observation": jnp.ones((1, 1)),
    }
    loss, td_abs = q_loss(
        q_apply, lambda p, x: target_values, 1.0, None, None, batch, jnp.ones(1)
    )
    # target = 1 + 0.5 * 3 = 2.5; q(s, a=0) = 1 -> td = 1.5; Huber(1.5, delta 1) = 1.0.
    np.testing.assert_allclose(td_abs, [1.5])
    np.testing.assert_allclose(loss, 1.0)
    # Vanilla DQN bootstraps from the target net's max (4.0): target 1 + 0.5 * 4 = 3 -> td 2.0,
    # Huber(2.0, delta 1) = 1.5.
    loss, td_abs = q_loss(
        q_apply, lambda p, x: target_values, 1.0, None, None, batch, jnp.ones(1), double_q=False
    )
    np.testing.assert_allclose(td_abs, [2.0])
    np.testing.assert_allclose(loss, 1.5)


def test_d4pg_learner_fits_a_fixed_batch_and_runs_several_sgd_steps_per_call():
    config = D4PGConfig(policy_hidden_sizes=(32,), critic_hidden_sizes=(32,), batch_size=16,
                        sgd_steps_per_call=3, critic_learning_rate=1e-2, v_min=-10, v_max=10)
    networks = make_d4pg_networks(config, 3, 2)
    rng = np.random.default_rng(0)
    batch = {
        "observation": rng.normal(size=(3, 16, 3)).astype(np.float32),
        "action": rng.uniform(-1, 1, size=(3, 16, 2)).astype(np.float32),
        "reward": np.ones((3, 16), np.float32),
        "discount": np.zeros((3, 16), np.float32),
        "next_observation": rng.normal(size=(3, 16, 3)).astype(np.float32),
    }

    def batches():
        while True:
            yield batch

    learner = D4PGLearner(networks, config, batches(), seed=0)
    policy_before = jax.tree_util.tree_map(np.array, learner.policy_params())
    first = learner.step()["critic_loss"]
    for _ in range(30):
        last = learner.step()["critic_loss"]
    assert learner.steps == 31 * 3
    assert last < 0.5 * first  # terminal reward 1: the critic learns a point mass at 1
    # The deterministic policy gradient must move the policy (dQ/da flows into it).
    moved = jax.tree_util.tree_map(
        lambda a, b: float(np.abs(np.asarray(a) - b).max()), learner.policy_params(), policy_before
    )
    assert max(jax.tree_util.tree_leaves(moved)) > 1e-4


def test_exploration_spreads_over_actors():
    assert actor_sigma(0.2, 0, 4) == pytest.approx(0.05)
    assert actor_sigma(0.2, 3, 4) == pytest.approx(0.2)
    with pytest.raises(ValueError):
        actor_sigma(0.2, 4, 4)
    assert actor_epsilon(0.01, 0.1, 0, 1) == 0.01
    assert actor_epsilon(0.01, 0.1, 2, 3) == pytest.approx(0.1)
    noisy = gaussian_exploration(0.5, seed=0)(np.zeros((1, 3), np.float32), 0)
    assert noisy.shape == (1, 3) and np.all(np.abs(noisy) <= 1) and np.any(noisy != 0)
    explore = epsilon_greedy(1.0, 0.0, decay_steps=10, seed=0)
    q = np.array([[0.0, 1.0]])
    assert np.all([explore(q, 10)[0] == 1 for _ in range(20)])  # fully decayed -> greedy
    assert len({int(explore(q, 0)[0]) for _ in range(50)}) == 2  # epsilon 1 -> random


def test_presets_and_overrides():
    config = d4pg_actorq.get_config("walker_stand")
    assert (config.task, config.max_actor_steps, config.pull_period) == ("walker_stand", 40_000,
                                                                         1000)
    assert d4pg_actorq.get_config("humanoid_walk").pull_period == 100
    assert dqn_actorq.get_config("mountaincar").max_actor_steps == 200_000
    # The paper's topology by default; the small presets are single-process quick runs.
    assert (config.launcher, config.num_actors) == ("local", 4)
    small = dqn_actorq.get_config("cartpole_small")
    assert (small.launcher, small.num_actors) == ("single", 1)
    # Every preset runs the default int8 recipe: no per-task layer stays fp32 (docs/ptq.md).
    assert d4pg_actorq.get_config("cheetah_run_cpu").quantizer == "int8"
    assert config.quantizer == "int8"
    with pytest.raises(ValueError, match="cartpole_balance"):
        d4pg_actorq.get_config("walker_run")
    with pytest.raises(ValueError, match="acrobot"):
        dqn_actorq.get_config("pong_small")
    learner = agent_config("d4pg", d4pg_actorq.get_config("walker_stand").learner.to_dict())
    assert learner.policy_hidden_sizes == (2048, 2048, 2048)
    with pytest.raises(ValueError, match="batch_size"):
        agent_config("dqn", {"batch_sise": 3})
    with pytest.raises(ValueError):
        DQNConfig(epsilon_min=0.5, epsilon_max=0.1)


@pytest.mark.parametrize("agent", ["dqn", "d4pg", "ddpg", "ppo", "a2c", "sac"])
def test_no_preset_picks_its_own_quantizer(agent):
    """Every preset's actors run the default int8 recipe, which decides per kind of policy head
    what stays fp32 (docs/ptq.md); an unknown preset's error lists them all."""
    import importlib
    import re

    module = importlib.import_module(f"configs.{agent}_actorq")
    with pytest.raises(ValueError, match="valid: ") as error:
        module.get_config("no_such_preset")
    presets = re.search(r"valid: (.*)", str(error.value)).group(1).split(", ")
    assert len(presets) >= 3
    quantizers = {preset: module.get_config(preset).quantizer for preset in presets}
    assert set(quantizers.values()) == {"int8"}, quantizers


def test_dqn_learning_rate_decays_linearly_to_its_final_value():
    constant = DQNConfig(learning_rate=1e-3)
    assert constant.learning_rate_schedule == 1e-3
    decaying = DQNConfig(learning_rate=1e-3, learning_rate_final=1e-4,
                         learning_rate_decay_steps=1000)
    schedule = decaying.learning_rate_schedule
    assert float(schedule(0)) == pytest.approx(1e-3)
    assert float(schedule(500)) == pytest.approx(5.5e-4)
    assert float(schedule(1000)) == float(schedule(5000)) == pytest.approx(1e-4)
    with pytest.raises(ValueError, match="learning_rate_final"):
        DQNConfig(learning_rate_decay_steps=10)
    with pytest.raises(ValueError, match="fp32"):
        DQNConfig(learning_rate_final=1e-4, learning_rate_decay_steps=10, precision="fp16")


def _dqn_learner_after_one_step(tau: float, period: int):
    from actorq.agents.dqn.learning import DQNLearner
    from actorq.agents.dqn.networks import make_networks as make_dqn_networks

    config = DQNConfig(hidden_sizes=(8,), batch_size=4, sgd_steps_per_call=1,
                       learning_rate=1e-2, target_update_tau=tau, target_update_period=period)
    rng = np.random.default_rng(0)

    def batches():
        while True:
            yield {"observation": rng.normal(size=(1, 4, 3)).astype(np.float32),
                   "action": rng.integers(0, 2, size=(1, 4)).astype(np.int32),
                   "reward": np.ones((1, 4), np.float32),
                   "discount": np.full((1, 4), 0.9, np.float32),
                   "next_observation": rng.normal(size=(1, 4, 3)).astype(np.float32)}

    learner = DQNLearner(make_dqn_networks(config, 3, 2), config, batches(), seed=0)
    initial = learner.state()["params"]
    learner.step()
    return initial, learner.state()


def test_dqn_polyak_target_moves_tau_of_the_way_each_step():
    initial, state = _dqn_learner_after_one_step(tau=0.25, period=100)
    moved = jax.tree.map(lambda p, t: float(np.abs(p - t).max()), state["params"], initial)
    assert min(jax.tree.leaves(moved)) > 0  # the online network took a step
    # One SGD step: target = 0.25 * online + 0.75 * initial (the target starts as the online).
    expected = jax.tree.map(lambda p, t: 0.25 * p + 0.75 * t, state["params"], initial)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7),
                 state["target_params"], expected)
    # The periodic copy leaves the target alone until its period.
    initial, state = _dqn_learner_after_one_step(tau=0.0, period=100)
    jax.tree.map(np.testing.assert_array_equal, state["target_params"], initial)
    with pytest.raises(ValueError, match="target_update_tau"):
        DQNConfig(target_update_tau=1.5)
