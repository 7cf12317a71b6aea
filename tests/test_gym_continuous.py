"""Tests for the continuous gymnasium tasks, their [-1, 1] action rescaling and the non-finite
guard shared by every adapter (gym, gym continuous, DMC).

Specs, dtypes and seeding of every registered task (these included) are covered by the
per-task tests in ``tests/test_envs.py``.
"""

from __future__ import annotations

import collections
from typing import Any

import dm_env
import gymnasium as gym
import numpy as np
import pytest
from dm_env import specs

from actorq.envs import (
    NonFiniteError,
    dmc,
    gym_adapter,
    make_batched_environment,
    make_environment,
)
from actorq.envs.gym_adapter import GymAdapter, GymContinuousAdapter

# task -> gymnasium's registered time limit (applied by gym.make, not by us).
TIME_LIMITS = {
    "halfcheetah": 1000,
    "walker2d": 1000,
    "hopper": 1000,
    "bipedalwalker": 1600,
    "mountaincar_continuous": 999,
    "pendulum": 200,
}


def _random_action(env: dm_env.Environment, rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, env.action_spec().shape).astype(np.float32)


# --- real tasks -------------------------------------------------------------------------------


@pytest.mark.parametrize("task", sorted(TIME_LIMITS))
def test_task_uses_gymnasium_time_limit_and_canonical_actions(task: str) -> None:
    env = make_environment(task, seed=0)
    assert isinstance(env, GymContinuousAdapter)
    assert env.gym_env.spec is not None
    assert env.gym_env.spec.max_episode_steps == TIME_LIMITS[task]
    spec = env.action_spec()
    assert spec == specs.BoundedArray(spec.shape, np.float32, -1.0, 1.0, name="action")
    rng = np.random.default_rng(0)
    ts = env.reset()
    for _ in range(20):
        ts = env.step(_random_action(env, rng))
        assert ts.observation.shape == env.observation_spec().shape
        assert ts.observation.dtype == np.float32
    env.close()


def test_pendulum_truncates_at_200_with_unit_discount() -> None:
    env = make_environment("pendulum", seed=0)
    rng = np.random.default_rng(0)
    env.reset()
    for t in range(1, 201):
        ts = env.step(_random_action(env, rng))
        assert ts.discount == 1.0
        assert ts.last() == (t == 200)
    ts = env.step(_random_action(env, rng))
    assert ts.first() and ts.reward is None and ts.discount is None


@pytest.mark.parametrize("task", ["hopper", "walker2d", "bipedalwalker"])
def test_falling_terminates_with_zero_discount(task: str) -> None:
    env = make_environment(task, seed=0)
    rng = np.random.default_rng(0)
    ts = env.reset()
    steps = 0
    while not ts.last():
        ts = env.step(_random_action(env, rng))  # random actions fall within ~60 steps
        steps += 1
        assert steps <= 300
    assert ts.discount == 0.0
    if task == "bipedalwalker":
        assert ts.reward == -100.0  # the fall penalty
    assert env.step(_random_action(env, rng)).first()


def test_mountaincar_continuous_goal_terminates() -> None:
    env = make_environment("mountaincar_continuous", seed=0)
    ts = env.reset()
    steps = 0
    while not ts.last():
        # Push along the velocity: pumps energy, reaches the flag in ~100 steps.
        ts = env.step(np.array([1.0 if ts.observation[1] >= 0 else -1.0], np.float32))
        steps += 1
        assert steps <= 300
    assert ts.discount == 0.0
    assert ts.reward > 90.0  # +100 at the goal minus the action cost


def test_halfcheetah_only_truncates() -> None:
    # HalfCheetah never terminates; its registered 1000-step limit is checked above. Here a
    # shortened limit (still gymnasium's TimeLimit) shows that it ends as a truncation.
    env = gym_adapter.make_gym_continuous_environment(
        "HalfCheetah-v5", seed=0, name="halfcheetah", max_episode_steps=50
    )
    rng = np.random.default_rng(0)
    env.reset()
    for t in range(1, 51):
        ts = env.step(_random_action(env, rng))
        assert ts.discount == 1.0
        assert ts.last() == (t == 50)


def test_pendulum_rescales_canonical_actions_to_torque() -> None:
    env = make_environment("pendulum", seed=0)
    env.reset()
    pendulum = env.gym_env.unwrapped
    # Pendulum's Box is [-2, 2]: torque = 2 * a, after clipping a to [-1, 1].
    for action, torque in [
        (-1.0, -2.0),
        (1.0, 2.0),
        (0.0, 0.0),
        (0.25, 0.5),
        (-0.5, -1.0),
        (3.0, 2.0),
        (-np.inf, -2.0),
    ]:
        env.step(np.array([action], np.float32))
        assert pendulum.last_u == pytest.approx(torque)


def test_batched_pendulum_matches_single_envs_across_truncation() -> None:
    k, seed = 3, 4
    batched = make_batched_environment("pendulum", k, seed=seed)
    singles = [make_environment("pendulum", seed=seed + i) for i in range(k)]
    assert batched.action_spec() == singles[0].action_spec()
    ts = batched.reset()
    refs = [env.reset() for env in singles]
    rng = np.random.default_rng(0)
    for t in range(1, 206):
        actions = rng.uniform(-1.0, 1.0, (k, 1)).astype(np.float32)
        ts = batched.step(actions)
        refs = [env.step(a) for env, a in zip(singles, actions, strict=True)]
        assert ts.observation.shape == (k, 3) and ts.observation.dtype == np.float32
        for i, ref in enumerate(refs):
            assert ts.step_type[i] == ref.step_type
            np.testing.assert_array_equal(ts.observation[i], ref.observation)
        assert ts.last().all() == (t == 200)
        assert ts.first().all() == (t == 201)
    np.testing.assert_array_equal(ts.discount, 1.0)


def test_batched_hopper_resets_envs_independently() -> None:
    batched = make_batched_environment("hopper", 2, seed=0)
    batched.reset()
    rng = np.random.default_rng(0)
    act_dim = batched.action_spec().shape[0]
    saw_termination = False
    for _ in range(100):
        ts = batched.step(rng.uniform(-1.0, 1.0, (2, act_dim)).astype(np.float32))
        assert ts.observation.shape == (2, 11)
        saw_termination |= bool((ts.last() & (ts.discount == 0.0)).any())
    assert saw_termination


# --- rescaling on a fake env ------------------------------------------------------------------


class _FakeEnv(gym.Env):
    """Counts steps; episodes end (terminated) after ``episode_len`` steps.

    Observation at step t is ``[t, t]``, reward 1. ``nan_at=(episode, step, field)`` makes that
    step (step 0 is the reset) return NaN in ``field`` (``'observation'`` or ``'reward'``).
    """

    def __init__(
        self,
        action_space: gym.Space,
        episode_len: int = 5,
        nan_at: tuple[int, int, str] | None = None,
        bad_value: float = np.nan,
    ) -> None:
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float64)
        self.action_space = action_space
        self.actions: list[Any] = []
        self._episode_len = episode_len
        self._nan_at = nan_at
        self._bad_value = bad_value
        self._episode = -1
        self._t = 0

    def _output(self) -> tuple[np.ndarray, float]:
        obs, reward = np.full(2, float(self._t)), 1.0
        if self._nan_at is not None and self._nan_at[:2] == (self._episode, self._t):
            if self._nan_at[2] == "observation":
                obs[1] = self._bad_value
            else:
                reward = self._bad_value
        return obs, reward

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._episode += 1
        self._t = 0
        return self._output()[0], {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.actions.append(action)
        self._t += 1
        obs, reward = self._output()
        return obs, reward, self._t == self._episode_len, False, {}


def _box(
    low: Any, high: Any, shape: tuple[int, ...] | None = None, dtype: Any = np.float32
) -> gym.spaces.Box:
    if shape is not None:  # scalar bounds broadcast to ``shape``
        low, high = np.full(shape, low), np.full(shape, high)
    return gym.spaces.Box(np.asarray(low, dtype), np.asarray(high, dtype), dtype=dtype)


def test_rescales_to_non_unit_bounds_by_hand() -> None:
    fake = _FakeEnv(_box([0.0, -2.0], [10.0, 3.0]), episode_len=100)
    env = GymContinuousAdapter(fake, seed=0)
    assert env.action_spec() == specs.BoundedArray((2,), np.float32, -1.0, 1.0, name="action")
    env.reset()
    # low + (a + 1) / 2 * (high - low), per dimension: [0, 10] and [-2, 3].
    for action, expected in [
        ([-1.0, -1.0], [0.0, -2.0]),
        ([1.0, 1.0], [10.0, 3.0]),
        ([0.0, 0.0], [5.0, 0.5]),
        ([0.5, -0.5], [7.5, -0.75]),
        ([-0.2, 0.6], [4.0, 2.0]),
        ([-7.0, np.inf], [0.0, 3.0]),  # clipped to [-1, 1] first
    ]:
        ts = env.step(np.array(action, np.float32))
        sent = fake.actions[-1]
        assert sent.dtype == np.float32 and sent.shape == (2,)
        np.testing.assert_allclose(sent, expected, rtol=1e-6, atol=1e-6)
        assert ts.mid() and ts.reward == np.float32(1.0) and ts.discount == np.float32(1.0)


def test_rescale_keeps_box_dtype_and_shape() -> None:
    fake = _FakeEnv(_box(-3.0, 1.0, shape=(2, 2), dtype=np.float64), episode_len=100)
    env = GymContinuousAdapter(fake, seed=0)
    assert env.action_spec().shape == (4,)
    env.reset()
    env.step(np.array([-1.0, 0.0, 0.5, 1.0], np.float32))
    sent = fake.actions[-1]
    assert sent.dtype == np.float64 and sent.shape == (2, 2)
    np.testing.assert_allclose(sent, [[-3.0, -1.0], [0.0, 1.0]])


def test_rescaled_actions_stay_inside_awkward_float64_bounds() -> None:
    # center - half_range != low here (rounding), so the adapter also clips the scaled action.
    low, high = [0.1, -1e-17, 1e-300], [0.7, 1e17, 3.3]
    fake = _FakeEnv(_box(low, high, dtype=np.float64), episode_len=10_000)
    env = GymContinuousAdapter(fake, seed=0)
    env.reset()
    for action in [np.ones(3), -np.ones(3), *np.random.default_rng(0).uniform(-1, 1, (200, 3))]:
        env.step(action)
        assert np.all(fake.actions[-1] >= low) and np.all(fake.actions[-1] <= high)


def test_unit_box_is_passed_through() -> None:
    fake = _FakeEnv(_box(-1.0, 1.0, shape=(3,)), episode_len=100)
    env = GymContinuousAdapter(fake, seed=0)
    env.reset()
    env.step(np.array([0.3, -0.7, 1.5], np.float32))
    np.testing.assert_allclose(fake.actions[-1], [0.3, -0.7, 1.0], rtol=1e-6)


def test_rejects_bad_actions_and_spaces() -> None:
    env = GymContinuousAdapter(_FakeEnv(_box(-2.0, 2.0, shape=(2,))), seed=0)
    env.reset()
    with pytest.raises(ValueError, match="NaN"):
        env.step(np.array([np.nan, 0.0], np.float32))
    with pytest.raises(ValueError, match="2 elements"):
        env.step(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="Box"):
        GymContinuousAdapter(_FakeEnv(gym.spaces.Discrete(3)))
    with pytest.raises(ValueError, match="finite action bounds"):
        GymContinuousAdapter(_FakeEnv(_box(-np.inf, np.inf, shape=(2,))))


def test_continuous_episode_semantics() -> None:
    env = GymContinuousAdapter(_FakeEnv(_box(-1.0, 1.0, shape=(1,)), episode_len=3), seed=0)
    zero = np.zeros(1, np.float32)
    assert env.step(zero).first()  # step before reset resets
    assert env.step(zero).mid() and env.step(zero).mid()
    ts = env.step(zero)
    assert ts.last() and ts.discount == 0.0 and ts.discount.dtype == np.float32
    assert env.step(zero).first()


# --- non-finite guard -------------------------------------------------------------------------


def _gym_continuous(nan_at: tuple[int, int, str], bad: float) -> GymContinuousAdapter:
    return GymContinuousAdapter(
        _FakeEnv(_box(-2.0, 2.0, shape=(1,)), nan_at=nan_at, bad_value=bad), name="pendulum"
    )


def _gym_discrete(nan_at: tuple[int, int, str], bad: float) -> GymAdapter:
    return GymAdapter(
        _FakeEnv(gym.spaces.Discrete(2), nan_at=nan_at, bad_value=bad), name="pendulum"
    )


class _NaNControlEnv:
    """A dm_control-like env (see test_envs' stub) with the same NaN schedule as ``_FakeEnv``."""

    def __init__(self, nan_at: tuple[int, int, str], bad: float, episode_len: int = 5) -> None:
        self._nan_at, self._bad, self._episode_len = nan_at, bad, episode_len
        self._episode, self._t = -1, 0

    def action_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((1,), np.float64, minimum=-1.0, maximum=1.0)

    def observation_spec(self) -> dict[str, specs.Array]:
        return {"x": specs.Array((2,), np.float64)}

    def _output(self) -> tuple[collections.OrderedDict, float]:
        obs, reward = np.full(2, float(self._t)), 1.0
        if self._nan_at[:2] == (self._episode, self._t):
            if self._nan_at[2] == "observation":
                obs[0] = self._bad
            else:
                reward = self._bad
        return collections.OrderedDict(x=obs), reward

    def reset(self) -> dm_env.TimeStep:
        self._episode, self._t = self._episode + 1, 0
        return dm_env.restart(self._output()[0])

    def step(self, action: np.ndarray) -> dm_env.TimeStep:
        if self._t == self._episode_len:
            return self.reset()
        self._t += 1
        obs, reward = self._output()
        if self._t == self._episode_len:
            return dm_env.truncation(reward, obs)
        return dm_env.transition(reward, obs)

    def close(self) -> None:
        pass


def _dmc(nan_at: tuple[int, int, str], bad: float) -> dmc.DMCEnvironment:
    return dmc.DMCEnvironment(_NaNControlEnv(nan_at, bad), name="pendulum")


ADAPTERS = [
    pytest.param(_gym_continuous, np.zeros(1, np.float32), id="gym_continuous"),
    pytest.param(_gym_discrete, np.int32(0), id="gym"),
    pytest.param(_dmc, np.zeros(1, np.float32), id="dmc"),
]


def _run_until_error(env: dm_env.Environment, action: Any, steps: int = 20) -> None:
    env.reset()
    for _ in range(steps):
        env.step(action)


@pytest.mark.parametrize(("make", "action"), ADAPTERS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_observation_raises_with_task_and_step(make: Any, action: Any, bad: float):
    # Episode 1 (the second), step 3: the count restarts at each reset (steps 0..5 per episode).
    env = make((1, 3, "observation"), bad)
    with pytest.raises(
        FloatingPointError, match=r"^task 'pendulum' returned a non-finite observation at step 3"
    ) as info:
        _run_until_error(env, action)
    assert isinstance(info.value, NonFiniteError)
    assert (info.value.task, info.value.step, info.value.field) == ("pendulum", 3, "observation")


@pytest.mark.parametrize(("make", "action"), ADAPTERS)
def test_non_finite_reward_raises(make: Any, action: Any) -> None:
    env = make((0, 2, "reward"), np.nan)
    with pytest.raises(
        FloatingPointError, match=r"^task 'pendulum' returned a non-finite reward at step 2"
    ):
        _run_until_error(env, action)


@pytest.mark.parametrize(("make", "action"), ADAPTERS)
def test_non_finite_reset_observation_is_step_0(make: Any, action: Any) -> None:
    env = make((0, 0, "observation"), np.nan)
    with pytest.raises(FloatingPointError, match=r"non-finite observation at step 0"):
        env.reset()


@pytest.mark.parametrize(("make", "action"), ADAPTERS)
def test_finite_runs_pass_the_guard(make: Any, action: Any) -> None:
    env = make((99, 0, "observation"), np.nan)  # never reached
    _run_until_error(env, action, steps=30)


@pytest.mark.parametrize(("make", "action"), ADAPTERS)
def test_huge_finite_values_pass_the_guard(make: Any, action: Any) -> None:
    # 1e30 is finite in float32 but its square is not: the guard's fast path must not misfire.
    env = make((0, 1, "observation"), 1e30)
    _run_until_error(env, action, steps=10)
    env = make((0, 1, "reward"), 3e38)
    _run_until_error(env, action, steps=10)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")
def test_overflow_to_float32_is_non_finite() -> None:
    # 1e300 is finite in float64 but inf once cast to the float32 observation the policy sees.
    env = _gym_continuous((0, 1, "observation"), 1e300)
    with pytest.raises(FloatingPointError, match="observation at step 1"):
        _run_until_error(env, np.zeros(1, np.float32))


def test_registry_names_the_task(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeEnv(_box(-2.0, 2.0, shape=(1,)), nan_at=(0, 37, "observation"), episode_len=50)
    monkeypatch.setattr(gym_adapter, "_gym_make", lambda env_id, **kwargs: fake)
    env = make_environment("pendulum", seed=0)
    with pytest.raises(
        FloatingPointError, match=r"^task 'pendulum' returned a non-finite observation at step 37"
    ):
        _run_until_error(env, np.zeros(1, np.float32), steps=40)

    class _Suite:
        @staticmethod
        def load(domain: str, task: str, task_kwargs: dict[str, Any]) -> _NaNControlEnv:
            return _NaNControlEnv((0, 4, "reward"), np.nan)

    monkeypatch.setattr(dmc, "_load_suite", lambda: _Suite)
    env = make_environment("walker_stand", seed=0)
    with pytest.raises(FloatingPointError, match=r"^task 'walker_stand' .* reward at step 4"):
        _run_until_error(env, np.zeros(1, np.float32))
