"""Learner placement (``config.learner_device``), tested on whatever this machine has."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax
import pytest

from launchpad_programs.placement import learner_device_scope, select_learner_device

REPO = Path(__file__).resolve().parents[1]


def _has_gpu() -> bool:
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


def test_cpu_and_auto_selection():
    assert select_learner_device("cpu").platform == "cpu"
    assert select_learner_device("auto") == jax.devices()[0]  # the accelerator, if any
    with learner_device_scope("cpu") as device:
        assert jax.numpy.ones(2).devices() == {device}


def test_unknown_device_names_the_valid_ones():
    with pytest.raises(ValueError, match="valid: auto, cpu, gpu"):
        select_learner_device("tpu9")


@pytest.mark.skipif(_has_gpu(), reason="this machine has a GPU: a gpu request succeeds")
def test_gpu_request_without_a_gpu_fails_clearly():
    with pytest.raises(ValueError, match="JAX sees no GPU"):
        select_learner_device("gpu")


@pytest.mark.skipif(_has_gpu(), reason="this machine has a GPU: a gpu request succeeds")
def test_cli_gpu_request_without_a_gpu_is_one_error_line(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.dqn_actorq",
         "--config=configs/dqn_actorq.py:cartpole_small", f"--config.run_dir={run}",
         "--config.learner_device=gpu"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("error: learner_device='gpu'")
    assert "Traceback" not in proc.stderr and not run.exists()


def test_a_run_records_its_learner_device(tmp_path):
    from configs import dqn_actorq
    from launchpad_programs.launch import run_experiment

    config = dqn_actorq.get_config("cartpole_small")
    config.learner_device = "cpu"
    config.max_actor_steps = 1200
    config.eval_every_steps = 100_000
    config.eval_episodes = 1
    config.track_energy = False
    config.run_dir = str(tmp_path / "run")
    summary = run_experiment(config)
    assert summary["learner_device"] == "cpu:0"


@pytest.mark.parametrize("spec, message", [
    ("actor_host", "not NAME=AMOUNT"),
    ("actor_host=0", "AMOUNT > 0"),
    ("=1", "not NAME=AMOUNT"),
    ("gpu_box=many", "not NAME=AMOUNT"),
])
def test_bad_ray_resources_name_the_expected_form(spec, message):
    from launchpad_programs.placement import parse_resources

    with pytest.raises(ValueError, match=message):
        parse_resources(spec)


def test_ray_placement_options_and_a_bad_placement():
    from configs import dqn_actorq
    from launchpad_programs.placement import ray_actor_options, ray_learner_options

    config = dqn_actorq.get_config("cartpole_small")
    config.ray_actor_resources = "actor_host=1, fast=0.5"
    assert ray_actor_options(config) == {"scheduling_strategy": "SPREAD",
                                         "resources": {"actor_host": 1.0, "fast": 0.5}}
    assert ray_learner_options(config) == {}
    config.ray_actor_placement = "scatter"
    with pytest.raises(ValueError,
                       match="unknown ray_actor_placement 'scatter'; valid: spread, pack"):
        ray_actor_options(config)
