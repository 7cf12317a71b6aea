"""Evaluation protocols for MinAtar policies (analysis.protocols, experiments.eval_protocols)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from actorq.analysis import protocols
from actorq.analysis.protocols import PROTOCOLS, Protocol, protocol_returns, sample_from_logits
from actorq.envs import make_environment
from actorq.envs.minatar_env import MinAtarEnvironment
from actorq.envs.registry import minatar_game

REPO = Path(__file__).resolve().parents[1]


def test_minatar_game_names_the_game_and_refuses_other_tasks() -> None:
    assert minatar_game("minatar_space_invaders") == "space_invaders"
    with pytest.raises(ValueError, match="not a MinAtar task"):
        minatar_game("cartpole")


def test_sticky_action_probability_is_checked_and_reaches_minatar() -> None:
    with pytest.raises(ValueError, match="sticky_action_prob"):
        MinAtarEnvironment("breakout", seed=0, sticky_action_prob=1.5)
    assert MinAtarEnvironment("breakout", seed=0, sticky_action_prob=0.0) \
        .minatar_env.sticky_action_prob == 0.0


def test_sampling_follows_the_softmax_of_the_logits() -> None:
    rng = np.random.default_rng(0)
    assert {sample_from_logits(np.array([0.0, 60.0, 0.0]), rng) for _ in range(200)} == {1}
    draws = [sample_from_logits(np.log(np.array([0.2, 0.3, 0.5])), rng) for _ in range(20_000)]
    np.testing.assert_allclose(np.bincount(draws, minlength=3) / 20_000, [0.2, 0.3, 0.5],
                               atol=0.015)


def _state_dependent_policy(num_actions: int):
    """Logits that depend on the frame, so that greedy and sampled play differ."""
    weights = np.random.default_rng(1).normal(size=(400, num_actions))

    def runtime(observations: np.ndarray) -> np.ndarray:
        flat = observations.reshape(len(observations), -1)[:, :400].astype(np.float32)
        return flat @ weights[: flat.shape[1]]

    return runtime


def test_protocols_play_shared_seeds_with_their_own_sticky_actions(monkeypatch) -> None:
    made = []
    real = protocols.make_minatar_environment

    def spy(game, **kwargs):
        made.append((game, kwargs["seed"], kwargs["sticky_action_prob"]))
        return real(game, **kwargs)

    monkeypatch.setattr(protocols, "make_minatar_environment", spy)
    actions = make_environment("minatar_breakout", 0).action_spec().num_values
    runtime = _state_dependent_policy(actions)
    greedy = Protocol(0.0, sampled=False)
    first = protocol_returns(runtime, "minatar_breakout", greedy, episodes=3, seed=4)
    assert protocol_returns(runtime, "minatar_breakout", greedy, episodes=3, seed=4) == first
    protocol_returns(runtime, "minatar_breakout", PROTOCOLS[0], episodes=3, seed=4)
    seeds = [s for _, s, _ in made]
    assert seeds[:3] == seeds[3:6] == seeds[6:9] and len(set(seeds[:3])) == 3
    assert [p for _, _, p in made] == [0.0] * 6 + [0.1] * 3
    assert {g for g, _, _ in made} == {"breakout"}


def test_a_one_hot_policy_plays_the_same_sampled_or_greedy() -> None:
    def always_left(observations: np.ndarray) -> np.ndarray:
        return np.tile(np.array([0.0, 80.0, 0.0]), (len(observations), 1))

    for sticky in (0.0, 0.1):
        greedy = protocol_returns(always_left, "minatar_breakout", Protocol(sticky, False), 2, 0)
        sampled = protocol_returns(always_left, "minatar_breakout", Protocol(sticky, True), 2, 0)
        assert greedy == sampled


def test_protocols_refuse_other_tasks_and_no_episodes() -> None:
    with pytest.raises(ValueError, match="MinAtar tasks only"):
        protocol_returns(lambda o: o, "cartpole", PROTOCOLS[0], 1)
    with pytest.raises(ValueError, match="episodes"):
        protocol_returns(lambda o: o, "minatar_breakout", PROTOCOLS[0], 0)


@pytest.fixture(scope="module")
def ppo_minatar_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from experiments.pixel_pipeline import pipeline_config
    from launchpad_programs.launch import run_experiment

    config = pipeline_config("ppo", "minatar_breakout", 256, "int8")
    config.envs_per_actor = 2
    config.learner.unrolls_per_batch = 2
    config.learner.unroll_length = 32
    config.learner.minibatches = 2
    config.chunk_size = 32
    config.replay.max_size, config.replay.min_size = 4, 2
    config.run_dir = str(tmp_path_factory.mktemp("protocols") / "ppo")
    run_experiment(config)
    return Path(config.run_dir)


def test_eval_protocols_end_to_end(ppo_minatar_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = subprocess.run(
        [sys.executable, "-m", "experiments.eval_protocols", f"--run_dir={ppo_minatar_run}",
         "--episodes=2", "--reference=28", f"--out_dir={out}"],
        cwd=REPO, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((out / "protocols.json").read_text())
    rows = report["rows"]
    assert [(r["precision"], r["sticky_action_prob"], r["sampled"]) for r in rows] == [
        (q, p.sticky_action_prob, p.sampled) for q in ("fp32", "int8") for p in PROTOCOLS]
    assert all(len(r["returns"]) == 2 and r["mean"] == np.mean(r["returns"]) for r in rows)
    assert "| int8 | sticky 0, sampled |" in (out / "protocols.md").read_text()


def test_eval_protocols_refuses_runs_without_a_categorical_minatar_policy(tmp_path: Path) -> None:
    from experiments.eval_protocols import check_args

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"agent": "ppo", "task": "cartpole"}))
    with pytest.raises(ValueError, match="protocols cover MinAtar"):
        check_args(run, ["fp32"], 1, None)
    (run / "config.json").write_text(json.dumps({"agent": "dqn", "task": "minatar_breakout"}))
    with pytest.raises(ValueError, match="categorical"):
        check_args(run, ["fp32"], 1, None)
    (run / "config.json").write_text(json.dumps({"agent": "ppo", "task": "minatar_breakout"}))
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        check_args(run, ["fp32"], 1, None)
