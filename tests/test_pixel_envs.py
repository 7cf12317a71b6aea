"""Tests for the pixel tasks: Atari (ale-py, Nature-DQN preprocessing) and MinAtar.

Also checks that the replay/on-policy paths treat a MID timestep with discount 0 (a lost life in
Atari training mode) as a cut of the value target.
"""

from __future__ import annotations

import dm_env
import numpy as np
import pytest
from dm_env import specs

from actorq.envs import (
    TASKS,
    NonFiniteError,
    atari,
    is_discrete,
    is_pixel,
    make_environment,
    minatar_env,
    task_family,
)
from actorq.envs.base import CheckedEnvironment
from actorq.replay.adders import NStepTransitionAdder, UnrollAdder

# task -> (observation shape, number of actions). Atari: ALE's minimal action sets; MinAtar: the
# minimal sets, as gymnax uses them.
ATARI = {
    "pong": ((84, 84, 4), 6),
    "breakout": ((84, 84, 4), 4),
    "space_invaders": ((84, 84, 4), 6),
    "beam_rider": ((84, 84, 4), 9),
    "ms_pacman": ((84, 84, 4), 9),
    "qbert": ((84, 84, 4), 6),
    "seaquest": ((84, 84, 4), 18),
}
MINATAR = {
    "minatar_breakout": ((10, 10, 4), 3),
    "minatar_space_invaders": ((10, 10, 6), 4),
    "minatar_seaquest": ((10, 10, 10), 6),
    "minatar_asterix": ((10, 10, 4), 5),
    "minatar_freeway": ((10, 10, 7), 3),
}
PIXEL_TASKS = {**ATARI, **MINATAR}
NUM_STEPS = 20


def _actions(num_actions: int, n: int, seed: int = 0) -> list[np.int32]:
    rng = np.random.default_rng(seed)
    return [np.int32(a) for a in rng.integers(0, num_actions, size=n)]


# --- registry ---------------------------------------------------------------------------------


def test_registry_lists_pixel_tasks() -> None:
    assert tuple(t for t in TASKS if is_pixel(t)) == tuple(PIXEL_TASKS)
    for task in ATARI:
        assert task_family(task) == "atari" and is_discrete(task)
    for task in MINATAR:
        assert task_family(task) == "minatar" and is_discrete(task)
    assert not is_pixel("cartpole") and not is_pixel("walker_stand")
    with pytest.raises(ValueError, match="tetris") as info:
        is_pixel("tetris")
    for task in PIXEL_TASKS:
        assert task in str(info.value)


def test_evaluation_flag_is_ignored_by_other_tasks() -> None:
    train, evaluation = (make_environment("cartpole", seed=0, evaluation=e) for e in (0, 1))
    np.testing.assert_array_equal(train.reset().observation, evaluation.reset().observation)


def test_integer_observations_skip_the_finite_check_but_rewards_do_not() -> None:
    class Pixels(CheckedEnvironment):
        def __init__(self, reward: float) -> None:
            super().__init__("pixels")
            self._reward = reward

        def _reset(self) -> dm_env.TimeStep:
            return dm_env.restart(np.full((2, 2), 255, np.uint8))

        def _step(self, action: object) -> dm_env.TimeStep:
            return dm_env.transition(np.float32(self._reward), np.zeros((2, 2), np.uint8))

        def observation_spec(self) -> specs.Array:
            return specs.Array((2, 2), np.uint8)

        def action_spec(self) -> specs.Array:
            return specs.DiscreteArray(2)

    env = Pixels(1.0)
    env.reset()
    env.step(0)
    env = Pixels(float("nan"))
    env.reset()
    with pytest.raises(NonFiniteError, match="reward"):
        env.step(0)


# --- every pixel task -------------------------------------------------------------------------


@pytest.mark.parametrize("task", PIXEL_TASKS)
def test_pixel_task_steps_with_uint8_observations_and_is_reproducible(task: str) -> None:
    shape, num_actions = PIXEL_TASKS[task]
    env_a, env_b = make_environment(task, seed=3), make_environment(task, seed=3)
    obs_spec = env_a.observation_spec()
    # Bounded: pixel networks scale the codes by 1 / maximum (255 for frames, 1 for MinAtar).
    maximum = 1 if task.startswith("minatar_") else 255
    assert obs_spec == specs.BoundedArray(shape, np.uint8, 0, maximum, name="observation")
    act_spec = env_a.action_spec()
    assert act_spec == specs.DiscreteArray(num_actions, dtype=np.int32, name="action")

    actions = _actions(num_actions, NUM_STEPS, seed=1)
    run_a = [env_a.reset()] + [env_a.step(a) for a in actions]
    run_b = [env_b.reset()] + [env_b.step(a) for a in actions]
    assert run_a[0].first()
    for ts_a, ts_b in zip(run_a, run_b, strict=True):
        assert ts_a.observation.dtype == np.uint8  # no float anywhere
        assert ts_a.observation.shape == shape and ts_a.observation.flags.c_contiguous
        obs_spec.validate(ts_a.observation)
        assert ts_a.step_type == ts_b.step_type and ts_a.reward == ts_b.reward
        np.testing.assert_array_equal(ts_a.observation, ts_b.observation)
        if not ts_a.first():
            assert np.asarray(ts_a.reward).dtype == np.float32
            assert np.asarray(ts_a.discount).dtype == np.float32
    # Each step's observation is a fresh array, not a view of a reused buffer.
    assert not np.shares_memory(run_a[-1].observation, run_a[-2].observation)
    env_a.close()
    env_b.close()


# --- Atari ------------------------------------------------------------------------------------


def test_atari_protocol_default_time_limit_and_channels_last_stack() -> None:
    env = make_environment("pong", seed=0)
    ale_env = env.gym_env.unwrapped
    assert ale_env._frameskip == 1
    assert ale_env.ale.getFloat("repeat_action_probability") == 0.0
    assert ale_env.ale.getInt("max_num_frames_per_episode") == 108_000
    assert ale_env.spec.max_episode_steps is None  # ALE's frame limit is the only time limit
    assert env.gym_env.observation_space.dtype == np.uint8
    observations = [env.reset().observation] + [env.step(0).observation for _ in range(5)]
    # Channel i of step t is channel i + 1 of step t - 1: the stack shifts by one frame a step.
    for previous, current in zip(observations, observations[1:]):
        np.testing.assert_array_equal(current[..., :-1], previous[..., 1:])
    assert observations[-1].max() > 0


def test_atari_time_limit_is_a_truncation() -> None:
    env = atari.make_atari_environment("Pong", seed=0, max_num_frames_per_episode=400)
    ts, steps = env.reset(), 0
    while not ts.last() and steps < 200:
        ts, steps = env.step(0), steps + 1
    # 400 frames = 100 agent steps, less the (up to 30) no-op frames at reset.
    assert 92 <= steps <= 100
    assert ts.discount == 1.0
    assert env.step(0).first()


def test_atari_grayscale_obs_type_gives_the_same_observations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    grayscale = atari.make_atari_environment("Breakout", seed=5)
    monkeypatch.setattr(atari, "OBS_TYPE", "rgb")
    rgb = atari.make_atari_environment("Breakout", seed=5)
    assert rgb.gym_env.unwrapped._obs_type == "rgb"
    np.testing.assert_array_equal(grayscale.reset().observation, rgb.reset().observation)
    for action in _actions(4, 15, seed=2):
        np.testing.assert_array_equal(
            grayscale.step(action).observation, rgb.step(action).observation
        )


def test_atari_training_cuts_the_discount_at_a_life_loss_and_evaluation_does_not() -> None:
    train = make_environment("breakout", seed=0)
    evaluation = make_environment("breakout", seed=0, evaluation=True)
    assert not train.evaluation and evaluation.evaluation
    ale = train.gym_env.unwrapped.ale
    train.reset()
    evaluation.reset()
    lives = ale.lives()
    assert lives == 5
    rng = np.random.default_rng(0)
    for _ in range(5000):
        action = np.int32(rng.integers(4))
        ts_train, ts_eval = train.step(action), evaluation.step(action)
        # Same game in both modes: only rewards and discounts differ.
        np.testing.assert_array_equal(ts_train.observation, ts_eval.observation)
        assert ts_train.reward == np.sign(ts_eval.reward)
        if ale.lives() < lives:
            break
        assert ts_train.mid() and ts_train.discount == 1.0 and ts_eval.discount == 1.0
    else:
        pytest.fail("random play lost no life in 5000 steps")
    # The life loss: the game goes on (MID), the value target is cut in training mode only.
    assert ts_train.mid() and ts_eval.mid()
    assert ts_train.discount == 0.0 and np.asarray(ts_train.discount).dtype == np.float32
    assert ts_eval.discount == 1.0
    ts_train, ts_eval = train.step(np.int32(1)), evaluation.step(np.int32(1))
    assert ts_train.mid() and ts_train.discount == 1.0 and ts_eval.discount == 1.0


def test_atari_training_clips_rewards_to_their_sign() -> None:
    train = make_environment("space_invaders", seed=0)
    evaluation = make_environment("space_invaders", seed=0, evaluation=True)
    train.reset()
    evaluation.reset()
    raw = []
    rng = np.random.default_rng(0)
    for _ in range(2000):
        action = np.int32(rng.integers(6))
        ts_train, ts_eval = train.step(action), evaluation.step(action)
        raw.append(float(ts_eval.reward))
        assert ts_train.reward in (-1.0, 0.0, 1.0)
        assert np.asarray(ts_train.reward).dtype == np.float32
        assert ts_train.reward == np.sign(ts_eval.reward)
        if ts_eval.reward > 1.0:
            break
    else:
        pytest.fail("random play scored no reward above 1 in 2000 steps")
    assert ts_train.reward == 1.0
    # The game score is kept unclipped in both modes.
    assert train.raw_episode_return == evaluation.raw_episode_return == sum(raw)


# --- MinAtar ----------------------------------------------------------------------------------


def test_minatar_uses_sticky_actions_and_gymnax_minimal_action_sets() -> None:
    gymnax_sets = {  # gymnax/environments/minatar/*.py, minimal_action_set
        "minatar_breakout": (0, 1, 3),
        "minatar_space_invaders": (0, 1, 3, 5),
        "minatar_seaquest": (0, 1, 2, 3, 4, 5),
        "minatar_asterix": (0, 1, 2, 3, 4),
        "minatar_freeway": (0, 2, 4),
    }
    for task, action_set in gymnax_sets.items():
        env = make_environment(task, seed=0)
        assert env.action_set == action_set
        assert env.minatar_env.sticky_action_prob == 0.1
        expected_limit = 2500 if task == "minatar_freeway" else 1000
        assert env.max_episode_steps == expected_limit
        assert set(np.unique(env.reset().observation)) <= {0, 1}


def test_minatar_seeds_differ() -> None:
    runs = []
    for seed in (0, 1):
        env = make_environment("minatar_asterix", seed=seed)
        runs.append([env.reset().observation] + [env.step(np.int32(0)).observation
                                                 for _ in range(100)])
    assert any(not np.array_equal(a, b) for a, b in zip(*runs))


def test_minatar_game_over_is_a_termination() -> None:
    env = make_environment("minatar_breakout", seed=0)
    env.reset()
    for _ in range(1000):  # NOOP: the paddle never moves, the ball falls past it soon
        ts = env.step(np.int32(0))
        if ts.last():
            break
    assert ts.last() and ts.discount == 0.0
    assert env.step(np.int32(0)).first()


def test_minatar_time_limit_is_a_truncation() -> None:
    # Freeway cannot die: only the time limit (gymnax's 2500 steps) ends it.
    env = make_environment("minatar_freeway", seed=0)
    ts, steps = env.reset(), 0
    while not ts.last() and steps < 3000:
        ts, steps = env.step(np.int32(1)), steps + 1  # up
    assert steps == 2500 and ts.discount == 1.0
    assert env.step(np.int32(0)).first()
    short = minatar_env.make_minatar_environment("breakout", seed=0, max_episode_steps=3)
    short.reset()
    step_types = [short.step(np.int32(0)).step_type for _ in range(4)]
    assert step_types == [dm_env.StepType.MID, dm_env.StepType.MID, dm_env.StepType.LAST,
                          dm_env.StepType.FIRST]


def test_minatar_rejects_bad_actions() -> None:
    env = make_environment("minatar_breakout", seed=0)
    env.reset()
    for action in (3, -1, 0.5):
        with pytest.raises(ValueError):
            env.step(action)


# --- a MID step with discount 0 cuts the value target -----------------------------------------


def _steps_with_a_cut() -> list[dm_env.TimeStep]:
    """FIRST, then rewards 1, 2 (a lost life: MID with discount 0), 4, 8, then LAST (16)."""
    obs = [np.full((2, 2, 1), i, np.uint8) for i in range(6)]
    one, zero = np.float32(1.0), np.float32(0.0)
    return [
        dm_env.restart(obs[0]),
        dm_env.transition(np.float32(1.0), obs[1], one),
        dm_env.transition(np.float32(2.0), obs[2], zero),
        dm_env.transition(np.float32(4.0), obs[3], one),
        dm_env.transition(np.float32(8.0), obs[4], one),
        dm_env.TimeStep(dm_env.StepType.LAST, np.float32(16.0), zero, obs[5]),
    ]


def test_n_step_adder_cuts_at_a_mid_step_with_zero_discount() -> None:
    items: list[dict[str, np.ndarray]] = []
    adder = NStepTransitionAdder(items.append, n_step=3, discount=0.9)
    timesteps = _steps_with_a_cut()
    adder.add_first(timesteps[0])
    for action, ts in enumerate(timesteps[1:]):
        adder.add(np.int32(action), ts)
    assert len(items) == 5
    # From s_0: r_1 + 0.9 r_2, and nothing after the cut (the 4 is not in it), no bootstrap.
    assert items[0]["reward"] == pytest.approx(1.0 + 0.9 * 2.0)
    assert items[0]["discount"] == 0.0
    assert items[1]["reward"] == pytest.approx(2.0) and items[1]["discount"] == 0.0
    # After the cut the returns run on normally.
    assert items[2]["reward"] == pytest.approx(4.0 + 0.9 * 8.0 + 0.81 * 16.0)
    assert items[3]["reward"] == pytest.approx(8.0 + 0.9 * 16.0)


def _unroll_with_a_cut() -> dict[str, np.ndarray]:
    items: list[dict[str, np.ndarray]] = []
    adder = UnrollAdder(items.append, unroll_length=5)
    timesteps = _steps_with_a_cut()
    adder.add_first(timesteps[0])
    for action, ts in enumerate(timesteps[1:]):
        adder.add(np.int32(action), ts)
    (item,) = items
    return item


def test_unroll_adder_carries_the_cut_and_gae_does_not_bootstrap_across_it() -> None:
    from actorq.agents.on_policy.advantages import generalized_advantages

    item = _unroll_with_a_cut()
    np.testing.assert_array_equal(item["discount"], [1, 0, 1, 1, 0])
    np.testing.assert_array_equal(item["last"], [0, 0, 0, 0, 1])
    # lambda = 0: one-step TD errors; the cut step's delta ignores V(s') (here 100).
    values, next_values = np.zeros(5, np.float32), np.full(5, 100.0, np.float32)
    advantages = generalized_advantages(item["reward"], item["discount"], item["last"],
                                        values, next_values, 0.9, 0.0)
    np.testing.assert_allclose(advantages, [1.0 + 90.0, 2.0, 4.0 + 90.0, 8.0 + 90.0, 16.0])


def test_gae_does_not_carry_rewards_across_a_mid_step_with_zero_discount() -> None:
    from actorq.agents.on_policy.advantages import generalized_advantages

    item = _unroll_with_a_cut()
    zeros = np.zeros(5, np.float32)
    advantages = generalized_advantages(item["reward"], item["discount"], item["last"],
                                        zeros, zeros, 0.9, 0.95)
    # With V = 0, A at the cut step is its own reward only.
    assert float(advantages[1]) == pytest.approx(2.0)
