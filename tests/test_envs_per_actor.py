"""Several environments per actor (``envs_per_actor``): one batched policy call per step.

Checks the loop (every environment stepped, each with its own adder and episode bookkeeping, a
step budget honoured exactly), the pull period in environment steps, and whole runs with the
single-process and local launchers.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from actorq.agents.dqn.acting import epsilon_greedy
from actorq.envs import make_environment
from actorq.replay.adders import NStepTransitionAdder
from actorq.runtime.actor import FeedForwardActor
from actorq.runtime.breakdown import RuntimeBreakdown
from actorq.runtime.environment_loop import EnvironmentLoop
from actorq.runtime.variable_client import VariableClient


class RecordingRuntime:
    """Q-values of zeros; records the batch size of every call."""

    name = "recording"

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.loads = 0

    def load(self, package) -> None:
        self.loads += 1

    def __call__(self, observations: np.ndarray) -> np.ndarray:
        self.batches.append(observations.shape[0])
        return np.zeros((observations.shape[0], 2), np.float32)


class CountingSource:
    """Publishes a new version on every request (so every due pull loads)."""

    def __init__(self, package_bytes: bytes) -> None:
        self.version = 0
        self._bytes = package_bytes

    def latest(self) -> tuple[int, bytes]:
        self.version += 1
        return self.version, self._bytes


@pytest.fixture(scope="module")
def cartpole_package() -> bytes:
    import jax

    from actorq.networks import make_q_network
    from actorq.quantization import make_quantizer

    network = make_q_network(2, (16,))
    params = network.init(jax.random.key(0), np.zeros((1, 4), np.float32))
    return make_quantizer("int8").quantize(params, network, 1).to_bytes()


def make_loop(package: bytes, k: int, pull_period: int = 10_000):
    runtime, breakdown = RecordingRuntime(), RuntimeBreakdown()
    client = VariableClient(CountingSource(package), runtime, pull_period, breakdown)
    streams: list[list[dict]] = [[] for _ in range(k)]
    adders = [NStepTransitionAdder(streams[i].append, n_step=1, discount=0.99) for i in range(k)]
    actor = FeedForwardActor(runtime, client, epsilon_greedy(1.0, 1.0, 1, seed=0), adders,
                             breakdown)
    episodes = []
    envs = [make_environment("cartpole", seed=i) for i in range(k)]
    loop = EnvironmentLoop(envs, actor, breakdown, episodes.append)
    return loop, runtime, client, breakdown, streams, episodes


def test_every_environment_steps_with_one_policy_call_and_its_own_adder(cartpole_package):
    loop, runtime, _, breakdown, streams, episodes = make_loop(cartpole_package, k=3)
    finished = []
    for _ in range(200):
        finished += loop.step()
    assert runtime.batches == [3] * 200  # one call per step, one row per environment
    assert loop.steps == 600 and breakdown.env_steps == 600
    assert finished == episodes and len(episodes) == loop.episodes > 3
    for stream in streams:
        assert stream  # each environment fed its own adder
        # 1-step transitions of one environment chain: each starts where the previous ended,
        # except after the terminal transition of an episode (a fresh reset follows).
        for previous, current in zip(stream, stream[1:]):
            if not np.array_equal(previous["next_observation"], current["observation"]):
                assert previous["discount"] == 0.0
    # A random policy falls over in ~20 steps, long before CartPole's 500-step truncation, so
    # every finished episode ended in exactly one terminal transition.
    assert sum(1 for s in streams for t in s if t["discount"] == 0.0) == len(episodes)
    assert sum(e.episode_length for e in episodes) <= 600


def test_a_step_budget_below_the_environment_count_steps_only_that_many(cartpole_package):
    loop, runtime, *_ = make_loop(cartpole_package, k=4)
    loop.step(max_transitions=2)
    assert runtime.batches == [2] and loop.steps == 2
    loop.step()
    assert runtime.batches == [2, 4] and loop.steps == 6
    assert loop.step(max_transitions=0) == [] and loop.steps == 6


def test_pull_period_counts_environment_steps(cartpole_package):
    loop, runtime, client, *_ = make_loop(cartpole_package, k=4, pull_period=10)
    for _ in range(10):  # 40 environment steps: pulls due at 10, 20, 30 and 40
        loop.step()
    # The first action's pull, then one per 10 env steps, each taken by the next action: the
    # one due at 40 waits for the 11th step.
    assert client.num_pulls == 1 + 3
    loop.step()
    assert client.num_pulls == 1 + 4
    assert runtime.loads == client.num_pulls


def test_bad_envs_per_actor_is_a_clear_error(tmp_path):
    from configs import dqn_actorq
    from launchpad_programs.launch import run_experiment

    config = dqn_actorq.get_config("cartpole_small")
    config.envs_per_actor = 0
    config.run_dir = str(tmp_path / "run")
    with pytest.raises(ValueError, match="envs_per_actor=0 .must be an integer >= 1"):
        run_experiment(config)
    assert not (tmp_path / "run").exists()  # failed before creating anything


def _small_dqn(tmp_path, launcher: str, steps: int):
    from configs import dqn_actorq

    config = dqn_actorq.get_config("cartpole_small")
    config.launcher = launcher
    config.envs_per_actor = 4
    config.max_actor_steps = steps
    config.eval_every_steps = 1_000
    config.eval_episodes = 5
    config.track_energy = False
    config.run_dir = str(tmp_path / launcher)
    return config


@pytest.mark.slow
def test_single_process_with_4_envs_learns_cartpole_on_an_exact_budget(tmp_path):
    from actorq.metrics.loggers import read_jsonl
    from launchpad_programs.launch import run_experiment

    config = _small_dqn(tmp_path, "single", steps=6_002)  # not a multiple of 4
    summary = run_experiment(config)
    assert summary["actor_steps"] == 6_002
    evals = read_jsonl(tmp_path / "single" / "eval.jsonl")
    # Evaluations still happen once per eval_every_steps although steps advance by 4.
    assert [e["actor_steps"] for e in evals] == [0, 1000, 2000, 3000, 4000, 5000, 6000, 6002]
    assert evals[0]["eval_return"] < 50 and max(e["eval_return"] for e in evals) >= 195
    breakdown = json.loads((tmp_path / "single" / "breakdown.json").read_text())
    assert breakdown["actor_0"]["env_steps"] == 6_002


def test_local_topology_with_4_envs_per_actor(tmp_path):
    from actorq.metrics.loggers import read_jsonl
    from launchpad_programs.actorq_program import make_program
    from launchpad_programs.launch import run_experiment

    config = _small_dqn(tmp_path, "local", steps=4_000)
    config.num_actors = 2
    assert "4 x cartpole" in str(make_program(config))
    summary = run_experiment(config)
    assert not summary["interrupted"] and summary["actor_restarts"] == 0
    # Each actor checks the budget before a step of up to 4 environments.
    assert 4_000 <= summary["actor_steps"] <= 4_000 + (2 - 1) * 4
    breakdown = json.loads((tmp_path / "local" / "breakdown.json").read_text())
    assert sum(b["env_steps"] for b in breakdown.values()) == summary["actor_steps"]
    assert summary["learner_steps"] > 0
    assert read_jsonl(tmp_path / "local" / "actor_0.jsonl")  # episodes from a batched actor
