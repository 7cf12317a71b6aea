"""Learning tests: fixed seeds, small networks, fp32 and int8 actors both must learn.

These are the CI-sized learning checks (about a minute each on 2 cores).
Each asserts a return threshold within a step budget, not a time.
"""

from __future__ import annotations

import pytest

from actorq.metrics.loggers import read_jsonl
from configs import a2c_actorq, d4pg_actorq, ddpg_actorq, dqn_actorq, ppo_actorq
from launchpad_programs.launch import run_experiment


def _best_eval(run_dir) -> float:
    return max(row["eval_return"] for row in read_jsonl(run_dir / "eval.jsonl"))


@pytest.mark.slow
@pytest.mark.parametrize("quantizer", ["fp32", "int8"])
def test_dqn_cartpole_reaches_195(tmp_path, quantizer):
    config = dqn_actorq.get_config("cartpole_small")
    config.quantizer = quantizer
    config.max_actor_steps = 8_000
    config.eval_every_steps = 1_000
    config.eval_episodes = 5
    config.track_energy = False
    config.run_dir = str(tmp_path / quantizer)
    run_experiment(config)
    evals = read_jsonl(tmp_path / quantizer / "eval.jsonl")
    assert evals[0]["eval_return"] < 50  # an untrained policy falls over fast
    assert _best_eval(tmp_path / quantizer) >= 195


@pytest.mark.slow
# int8 actors only: they are the product's default, and this test is the suite's longest (~200 s
# per quantizer on CI). fp32 D4PG learning is measured on docs/learning.md.
@pytest.mark.parametrize("quantizer", ["int8"])
def test_d4pg_cartpole_balance_reaches_800(tmp_path, quantizer):
    # A fixed seed gives one trajectory per machine, not one everywhere: XLA's float results
    # differ with the CPU's vector units. Measured (AMD EPYC with AVX-512, seeds 0-6, fp32 and
    # int8 actors): the first eval >= 800 came at 4k-26k steps, and seed 0 once ended its 20k
    # steps at 754 on CI. 40k steps leaves margin on every seed measured.
    config = d4pg_actorq.get_config("cartpole_balance_small")
    config.quantizer = quantizer
    config.max_actor_steps = 40_000
    config.eval_every_steps = 2_000
    config.eval_episodes = 2
    config.track_energy = False
    config.run_dir = str(tmp_path / quantizer)
    run_experiment(config)
    evals = read_jsonl(tmp_path / quantizer / "eval.jsonl")
    assert evals[0]["eval_return"] < 500
    assert _best_eval(tmp_path / quantizer) >= 800


def _evals(run_dir) -> list[float]:
    return [row["eval_return"] for row in read_jsonl(run_dir / "eval.jsonl")]


@pytest.mark.slow
def test_ppo_cartpole_int8_actors_reach_and_hold_475(tmp_path):
    # The preset (the RL Zoo's PPO CartPole: 8 environments, 32-step unrolls, 20 epochs, PPO's
    # default learner log-prob + truncated IS), its whole 100k steps. Measured (seed 0, Milan):
    # cut at 50k the last 5 evals averaged 271 (the policy still swings at half the schedule);
    # at 100k the study's runs hold 500 (docs/algorithms.md).
    config = ppo_actorq.get_config("cartpole")
    config.track_energy = False
    config.run_dir = str(tmp_path / "run")
    run_experiment(config)
    evals = _evals(tmp_path / "run")
    assert evals[0] < 50
    assert max(evals) >= 475
    assert sum(evals[-5:]) / 5 >= 400, evals


@pytest.mark.slow
def test_a2c_cartpole_int8_actors_learn(tmp_path):
    # The whole preset (500k steps): A2C with a constant learning rate swings on CartPole before
    # it settles, so a shorter budget ends wherever a swing leaves it (measured on 4 seeds: the
    # issue #23 note of 2026-12-06).
    config = a2c_actorq.get_config("cartpole")
    config.eval_every_steps = 10_000
    config.track_energy = False
    config.run_dir = str(tmp_path / "run")
    run_experiment(config)
    evals = _evals(tmp_path / "run")
    assert evals[0] < 50
    assert max(evals) >= 475
    assert sum(evals[-5:]) / 5 >= 475, evals


@pytest.mark.slow
@pytest.mark.parametrize("critic_layer_norm", [False, True], ids=["plain", "critic_layer_norm"])
def test_ddpg_pendulum_int8_actors_learn(tmp_path, critic_layer_norm):
    # The Zoo's Pendulum DDPG, shrunk to 64 x 64 networks and 2k uniform-random steps.
    config = ddpg_actorq.get_config("pendulum")
    config.learner.critic_layer_norm = critic_layer_norm
    config.learner.policy_hidden_sizes = (64, 64)
    config.learner.critic_hidden_sizes = (64, 64)
    config.learner.uniform_random_steps = 2_000
    config.replay.min_size = 2_000
    config.max_actor_steps = 12_000
    config.eval_every_steps = 1_000
    config.eval_episodes = 5
    config.track_energy = False
    config.run_dir = str(tmp_path / "run")
    run_experiment(config)
    evals = _evals(tmp_path / "run")
    assert evals[0] < -900  # an untrained pendulum policy never swings up
    assert max(evals) >= -200
    assert sum(evals[-3:]) / 3 >= -300, evals
