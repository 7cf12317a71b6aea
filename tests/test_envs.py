"""Tests for actorq.envs: registry, DMC wrapper, Gym adapter, batched environment.

The continuous gymnasium tasks, action rescaling and the non-finite guard are tested in
``tests/test_gym_continuous.py``; the per-task tests here run over every registered task."""

from __future__ import annotations

import collections
import subprocess
import sys
from typing import Any

import dm_env
import numpy as np
import pytest
from dm_env import specs

from actorq.envs import (
    TASKS,
    BatchedEnvironment,
    BatchedTimeStep,
    dmc,
    is_discrete,
    is_pixel,
    make_batched_environment,
    make_environment,
    task_family,
)
from actorq.envs.gym_adapter import GymAdapter

DMC_TASKS = (
    "cartpole_balance",
    "walker_stand",
    "hopper_stand",
    "reacher_hard",
    "cheetah_run",
    "finger_spin",
    "humanoid_stand",
    "humanoid_walk",
)
GYM_TASKS = ("cartpole", "acrobot", "mountaincar", "lunarlander")
GYM_CONTINUOUS_TASKS = (
    "halfcheetah",
    "walker2d",
    "hopper",
    "bipedalwalker",
    "mountaincar_continuous",
    "pendulum",
    "lunarlander_continuous",
)
# The pixel tasks (Atari, MinAtar: uint8 images) are tested in tests/test_pixel_envs.py.
STATE_TASKS = tuple(task for task in TASKS if not is_pixel(task))
NUM_STEPS = 25


def _random_actions(spec: specs.Array, n: int, seed: int = 0) -> list[np.ndarray]:
    """n actions inside ``spec``, drawn deterministically."""
    rng = np.random.default_rng(seed)
    if isinstance(spec, specs.DiscreteArray):
        return [np.int32(a) for a in rng.integers(0, spec.num_values, size=n)]
    assert isinstance(spec, specs.BoundedArray)
    return [
        rng.uniform(spec.minimum, spec.maximum, size=spec.shape).astype(spec.dtype)
        for _ in range(n)
    ]


def _rollout(env: dm_env.Environment, actions: list[np.ndarray]) -> list[dm_env.TimeStep]:
    return [env.reset()] + [env.step(a) for a in actions]


# --- registry ---------------------------------------------------------------------------------


def test_registry_lists_paper_tasks() -> None:
    assert STATE_TASKS == DMC_TASKS + GYM_TASKS + GYM_CONTINUOUS_TASKS
    for task in DMC_TASKS:
        assert task_family(task) == "dmc"
        assert not is_discrete(task)
    for task in GYM_TASKS:
        assert task_family(task) == "gym"
        assert is_discrete(task)
    for task in GYM_CONTINUOUS_TASKS:
        assert task_family(task) == "gym_continuous"
        assert not is_discrete(task)


@pytest.mark.parametrize(
    "call",
    [
        lambda: make_environment("tetris"),
        lambda: task_family("tetris"),
        lambda: is_discrete("tetris"),
        lambda: make_batched_environment("tetris", 2),
    ],
)
def test_unknown_task_lists_valid_names(call: Any) -> None:
    with pytest.raises(ValueError, match="tetris") as info:
        call()
    assert ", ".join(sorted(TASKS)) in str(info.value)
    for task in GYM_CONTINUOUS_TASKS:
        assert task in str(info.value)


def test_gym_tasks_do_not_import_dm_control() -> None:
    # Fresh interpreter: in this process other tests have already imported dm_control.
    code = (
        "import sys\n"
        "import actorq.envs\n"
        "heavy = ('dm_control', 'mujoco', 'Box2D', 'pygame', 'ale_py', 'minatar')\n"
        "assert not [m for m in heavy if m in sys.modules], 'import actorq.envs is not lazy'\n"
        "from actorq.envs import make_environment\n"
        "env = make_environment('cartpole', seed=0)\n"
        "env.reset()\n"
        "env.step(0)\n"
        "assert not [m for m in heavy if m in sys.modules], 'cartpole imported a backend'\n"
        "env = make_environment('halfcheetah', seed=0)\n"
        "env.reset()\n"
        "assert 'mujoco' in sys.modules\n"
        "assert 'dm_control' not in sys.modules, 'halfcheetah imported dm_control'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --- every task -------------------------------------------------------------------------------


@pytest.mark.parametrize("task", STATE_TASKS)
def test_reset_and_step_with_specs(task: str) -> None:
    env = make_environment(task, seed=0)
    obs_spec = env.observation_spec()
    assert obs_spec == specs.Array(obs_spec.shape, np.float32, name="observation")
    assert len(obs_spec.shape) == 1 and obs_spec.shape[0] > 0

    act_spec = env.action_spec()
    if is_discrete(task):
        assert isinstance(act_spec, specs.DiscreteArray)
        assert act_spec.dtype == np.int32 and act_spec.num_values >= 2
    else:
        assert isinstance(act_spec, specs.BoundedArray)
        assert act_spec.dtype == np.float32 and len(act_spec.shape) == 1
        np.testing.assert_array_equal(act_spec.minimum, -1.0)
        np.testing.assert_array_equal(act_spec.maximum, 1.0)

    timesteps = _rollout(env, _random_actions(act_spec, NUM_STEPS))
    assert timesteps[0].first()
    for ts in timesteps:
        assert ts.observation.dtype == np.float32
        assert ts.observation.shape == obs_spec.shape
        obs_spec.validate(ts.observation)
        assert np.all(np.isfinite(ts.observation))
        if ts.first():
            continue
        assert np.isfinite(ts.reward)
        assert np.asarray(ts.reward).dtype == np.float32
        assert np.asarray(ts.discount).dtype == np.float32
        assert ts.discount in (0.0, 1.0)
    env.close()


@pytest.mark.parametrize("task", STATE_TASKS)
def test_seeding_is_reproducible(task: str) -> None:
    env_a, env_b, env_c = (make_environment(task, seed=s) for s in (3, 3, 4))
    actions = _random_actions(env_a.action_spec(), NUM_STEPS, seed=1)
    run_a, run_b = _rollout(env_a, actions), _rollout(env_b, actions)
    for ts_a, ts_b in zip(run_a, run_b, strict=True):
        assert ts_a.step_type == ts_b.step_type
        np.testing.assert_array_equal(ts_a.observation, ts_b.observation)
        assert ts_a.reward == ts_b.reward
    # All registered tasks randomise their initial state.
    assert not np.array_equal(run_a[0].observation, env_c.reset().observation)


# --- Gym adapter ------------------------------------------------------------------------------


def test_cartpole_termination_has_zero_discount_then_resets() -> None:
    env = make_environment("cartpole", seed=0)
    ts = env.reset()
    steps = 0
    while not ts.last():
        ts = env.step(0)  # constant push: the pole falls within a few dozen steps
        steps += 1
        assert steps < 100
    assert ts.discount == 0.0
    ts = env.step(0)
    assert ts.first() and ts.reward is None and ts.discount is None
    assert env.step(1).mid()


def test_mountaincar_truncation_has_unit_discount() -> None:
    env = make_environment("mountaincar", seed=0)
    env.reset()
    for t in range(1, 201):
        ts = env.step(1)  # "don't accelerate": never reaches the goal
        assert ts.discount == 1.0
        assert ts.last() == (t == 200)
    assert ts.reward == -1.0
    assert env.step(1).first()


def test_gym_seed_continues_across_episodes() -> None:
    env_a, env_b = make_environment("cartpole", seed=7), make_environment("cartpole", seed=7)
    firsts: list[np.ndarray] = []
    for env in (env_a, env_b):
        env.reset()
        obs = []
        for _ in range(80):  # several short episodes under a constant action
            ts = env.step(0)
            if ts.first():
                obs.append(ts.observation)
        firsts.append(np.stack(obs))
    assert len(firsts[0]) >= 2
    np.testing.assert_array_equal(firsts[0], firsts[1])
    # Resets after the first continue the RNG rather than re-seeding to the same state.
    assert not np.array_equal(firsts[0][0], firsts[0][1])


@pytest.mark.parametrize(
    "action", [1, np.int64(1), np.int32(1), np.uint8(1), np.array(1), np.array([1], np.int32)]
)
def test_gym_accepts_integer_scalar_forms(action: Any) -> None:
    env = make_environment("cartpole", seed=0)
    env.reset()
    assert env.step(action).mid()


@pytest.mark.parametrize("action", [np.array([0, 1]), 0.5, np.float32(1.0), 2, -1])
def test_gym_rejects_bad_actions(action: Any) -> None:
    env = make_environment("cartpole", seed=0)
    env.reset()
    with pytest.raises(ValueError):
        env.step(action)


def test_gym_step_before_reset_resets() -> None:
    assert make_environment("acrobot", seed=0).step(0).first()


def test_gym_adapter_requires_discrete_actions() -> None:
    import gymnasium as gym

    with pytest.raises(TypeError, match="Discrete"):
        GymAdapter(gym.make("Pendulum-v1"))


# --- DMC wrapper ------------------------------------------------------------------------------


def test_dmc_action_canonicalisation_reaches_native_bounds() -> None:
    env = make_environment("cartpole_balance", seed=0)
    assert isinstance(env, dmc.DMCEnvironment)
    native = env.native_action_spec
    env.reset()
    env.step(np.ones(env.action_spec().shape, np.float32))
    np.testing.assert_allclose(env.physics.data.ctrl, native.maximum)
    env.step(-np.ones(env.action_spec().shape, np.float32))
    np.testing.assert_allclose(env.physics.data.ctrl, native.minimum)
    env.step(np.full(env.action_spec().shape, 5.0, np.float32))  # out of range: clipped
    np.testing.assert_allclose(env.physics.data.ctrl, native.maximum)


class _StubControlEnv:
    """Just enough of dm_control's ``control.Environment`` to drive ``DMCEnvironment``."""

    def __init__(self) -> None:
        self.actions: list[np.ndarray] = []
        self._obs = collections.OrderedDict(
            [("b", np.array([1.0, 2.0])), ("a", np.float64(3.0)), ("c", np.ones((2, 2)))]
        )

    def action_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((2,), np.float64, minimum=[0.0, -2.0], maximum=[10.0, 3.0])

    def observation_spec(self) -> dict[str, specs.Array]:
        return {k: specs.Array(np.shape(v), np.float64) for k, v in self._obs.items()}

    def reset(self) -> dm_env.TimeStep:
        return dm_env.restart(self._obs)

    def step(self, action: np.ndarray) -> dm_env.TimeStep:
        self.actions.append(action)
        return dm_env.transition(np.float64(0.5), self._obs, discount=1.0)

    def close(self) -> None:
        pass


def test_dmc_rescales_to_non_unit_native_bounds() -> None:
    stub = _StubControlEnv()
    env = dmc.DMCEnvironment(stub)
    for action, expected in [
        ([-1.0, -1.0], [0.0, -2.0]),
        ([1.0, 1.0], [10.0, 3.0]),
        ([0.0, 0.0], [5.0, 0.5]),
        ([-7.0, np.inf], [0.0, 3.0]),
    ]:
        ts = env.step(np.array(action, np.float32))
        np.testing.assert_allclose(stub.actions[-1], expected)
        assert ts.reward == np.float32(0.5) and ts.discount == np.float32(1.0)
    with pytest.raises(ValueError, match="NaN"):
        env.step(np.array([np.nan, 0.0]))
    with pytest.raises(ValueError):
        env.step(np.zeros(3))


def test_dmc_observation_flattened_in_key_order() -> None:
    env = dmc.DMCEnvironment(_StubControlEnv())
    assert env.observation_spec().shape == (7,)
    obs = env.reset().observation
    assert obs.dtype == np.float32
    np.testing.assert_array_equal(obs, [1.0, 2.0, 3.0, 1.0, 1.0, 1.0, 1.0])


def test_dmc_time_limit_is_truncation() -> None:
    env = make_environment("cheetah_run", seed=0)
    env.reset()
    action = np.zeros(env.action_spec().shape, np.float32)
    for t in range(1, 1001):
        ts = env.step(action)
        assert ts.last() == (t == 1000)
    assert ts.discount == 1.0
    assert env.step(action).first()


# --- mujoco guard -----------------------------------------------------------------------------


def _assert_guard_message(message: str, version: str) -> None:
    assert "mujoco>=3.2,<4" in message
    assert version in message
    assert 'pip install "mujoco<4"' in message


@pytest.mark.parametrize("version", ["4.0.0", "4.1.2rc1", "3.1.6", "2.3.7"])
def test_mujoco_guard_rejects_bad_versions(version: str) -> None:
    with pytest.raises(RuntimeError) as info:
        dmc.check_mujoco_version(version)
    _assert_guard_message(str(info.value), version)


def test_mujoco_guard_accepts_installed_and_supported_versions() -> None:
    dmc.check_mujoco_version()
    dmc.check_mujoco_version("3.2.0")
    dmc.check_mujoco_version("3.17.0")


def test_mujoco_guard_blocks_dmc_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dmc, "_installed_mujoco_version", lambda: "4.0.0")
    with pytest.raises(RuntimeError) as info:
        make_environment("walker_stand", seed=0)
    _assert_guard_message(str(info.value), "4.0.0")
    # Gym tasks do not need MuJoCo at all.
    make_environment("cartpole", seed=0).reset()


def test_mujoco_guard_on_dm_control_import_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dmc, "_installed_mujoco_version", lambda: "3.17.0")
    monkeypatch.setitem(sys.modules, "dm_control", None)  # makes the import fail
    with pytest.raises(RuntimeError) as info:
        make_environment("walker_stand", seed=0)
    _assert_guard_message(str(info.value), "3.17.0")
    assert isinstance(info.value.__cause__, ImportError)


def test_mujoco_guard_when_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dmc, "_installed_mujoco_version", lambda: None)
    with pytest.raises(RuntimeError, match="not installed"):
        dmc.check_mujoco_version()


# --- batched ----------------------------------------------------------------------------------


def _check_batch(ts: BatchedTimeStep, k: int, obs_dim: int) -> None:
    assert ts.step_type.shape == (k,) and ts.step_type.dtype == np.int8
    assert ts.reward.shape == (k,) and ts.reward.dtype == np.float32
    assert ts.discount.shape == (k,) and ts.discount.dtype == np.float32
    assert ts.observation.shape == (k, obs_dim) and ts.observation.dtype == np.float32
    assert ts.first().dtype == np.bool_ and ts.last().dtype == np.bool_
    np.testing.assert_array_equal(ts.reward[ts.first()], 0.0)
    np.testing.assert_array_equal(ts.discount[ts.first()], 1.0)


def test_batched_auto_reset_matches_single_envs() -> None:
    k, seed = 4, 11
    batched = make_batched_environment("cartpole", k, seed=seed)
    assert isinstance(batched, BatchedEnvironment) and batched.num_envs == k
    assert batched.action_spec() == make_environment("cartpole").action_spec()
    singles = [make_environment("cartpole", seed=seed + i) for i in range(k)]
    obs_dim = batched.observation_spec().shape[0]

    ts = batched.reset()
    _check_batch(ts, k, obs_dim)
    assert ts.first().all()
    refs = [env.reset() for env in singles]

    saw_partial_boundary = False
    for t in range(60):
        # Constant but per-env different actions: episodes end at different times.
        actions = np.array([(i + t // 5) % 2 for i in range(k)], np.int32)
        prev_last = ts.last()
        ts = batched.step(actions)
        refs = [env.step(a) for env, a in zip(singles, actions, strict=True)]
        _check_batch(ts, k, obs_dim)
        # The step after LAST is FIRST for exactly those envs; the others continue.
        np.testing.assert_array_equal(ts.first(), prev_last)
        saw_partial_boundary |= bool(prev_last.any() and not prev_last.all())
        for i, ref in enumerate(refs):
            got = ts.index(i)
            assert got.step_type == ref.step_type
            np.testing.assert_array_equal(got.observation, ref.observation)
            assert got.reward == ref.reward and got.discount == ref.discount
            if ref.last():
                assert ts.discount[i] == 0.0  # cartpole ends by termination
    assert saw_partial_boundary
    batched.close()


def test_batched_index_first_follows_dm_env() -> None:
    batched = make_batched_environment("mountaincar", 2, seed=0)
    first = batched.reset().index(1)
    assert isinstance(first, dm_env.TimeStep)
    assert first.first() and first.reward is None and first.discount is None
    mid = batched.step(np.ones((2, 1), np.int32)).index(0)
    assert mid.mid() and mid.reward == -1.0 and mid.discount == 1.0


def test_batched_dmc_seeds_and_shapes() -> None:
    batched = make_batched_environment("reacher_hard", 2, seed=5)
    ts = batched.reset()
    for i in range(2):
        expected = make_environment("reacher_hard", seed=5 + i).reset().observation
        np.testing.assert_array_equal(ts.observation[i], expected)
    act_dim = batched.action_spec().shape[0]
    ts = batched.step(np.zeros((2, act_dim), np.float32))
    _check_batch(ts, 2, batched.observation_spec().shape[0])
    assert ts.mid().all()


def test_batched_unseeded_and_step_before_reset() -> None:
    batched = make_batched_environment("acrobot", 3)
    ts = batched.step(np.zeros(3, np.int32))
    assert ts.first().all()
    assert batched.step(np.zeros(3, np.int32)).mid().all()


def test_batched_validation() -> None:
    with pytest.raises(ValueError, match="num_envs"):
        make_batched_environment("cartpole", 0)
    batched = make_batched_environment("cartpole", 2, seed=0)
    batched.reset()
    with pytest.raises(ValueError, match="leading dimension"):
        batched.step(np.zeros(3, np.int32))
    with pytest.raises(ValueError):
        BatchedEnvironment([make_environment("cartpole"), make_environment("acrobot")])
