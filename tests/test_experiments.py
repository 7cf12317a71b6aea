"""Entry points end to end: run dir contents, bad input, resume, clean interruption."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actorq.metrics.loggers import read_jsonl
from configs import dqn_actorq
from launchpad_programs.launch import run_experiment

REPO = Path(__file__).resolve().parents[1]


def tiny_dqn(run_dir: Path, steps: int = 1500):
    config = dqn_actorq.get_config("cartpole_small")
    config.run_dir = str(run_dir)
    config.max_actor_steps = steps
    config.eval_every_steps = 500
    config.eval_episodes = 2
    config.checkpoint_every_steps = 1000
    config.track_energy = False
    config.replay.min_size = 200
    return config


def test_single_process_run_writes_everything(tmp_path):
    summary = run_experiment(tiny_dqn(tmp_path / "run"))
    run = tmp_path / "run"
    for name in ("config.json", "eval.jsonl", "actor_0.jsonl", "learner.jsonl", "eval.csv",
                 "breakdown.json", "breakdown.md", "summary.json", "energy.json"):
        assert (run / name).exists(), name
    assert list((run / "tb").iterdir())
    evals = read_jsonl(run / "eval.jsonl")
    assert [e["actor_steps"] for e in evals] == [0, 500, 1000, 1500]
    assert summary["actor_steps"] == 1500 and summary["learner_steps"] > 0
    assert json.loads((run / "config.json").read_text())["quantizer"] == "int8"
    breakdown = json.loads((run / "breakdown.json").read_text())["actor_0"]
    assert breakdown["env_steps"] == 1500 and breakdown["bytes_pulled"] > 0
    assert (run / "checkpoints").exists()


def test_resume_continues_from_checkpoint(tmp_path):
    first = run_experiment(tiny_dqn(tmp_path / "run", steps=1000))
    with pytest.raises(FileExistsError, match="--resume"):
        run_experiment(tiny_dqn(tmp_path / "run", steps=2000))
    second = run_experiment(tiny_dqn(tmp_path / "run", steps=2000), resume=True)
    assert second["actor_steps"] == 2000
    assert second["learner_steps"] > first["learner_steps"]
    steps = [e["actor_steps"] for e in read_jsonl(tmp_path / "run" / "eval.jsonl")]
    assert steps == [0, 500, 1000, 1500, 2000]  # the resumed run appends, no restart at 0
    wrong = tiny_dqn(tmp_path / "run", steps=3000)
    wrong.quantizer = "fp32"
    with pytest.raises(ValueError, match="quantizer"):
        run_experiment(wrong, resume=True)


def test_bad_input_fails_before_creating_a_run(tmp_path):
    config = tiny_dqn(tmp_path / "bad")
    config.quantizer = "int12"
    with pytest.raises(ValueError, match="quantizer"):
        run_experiment(config)
    config.quantizer = "int8"
    config.launcher = "slurm"
    with pytest.raises(ValueError, match="local"):
        run_experiment(config)
    assert not (tmp_path / "bad").exists()


def _cli(run_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "experiments.dqn_actorq",
            "--config=configs/dqn_actorq.py:cartpole_small", f"--config.run_dir={run_dir}",
            "--config.track_energy=False", "--config.eval_every_steps=500", *extra]


def test_cli_rejects_unknown_preset_and_field(tmp_path):
    bad_preset = subprocess.run(
        [sys.executable, "-m", "experiments.dqn_actorq",
         "--config=configs/dqn_actorq.py:pong_small"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert bad_preset.returncode != 0 and "cartpole" in bad_preset.stderr
    bad_field = subprocess.run(_cli(tmp_path / "x", "--config.learner.batch_sise=3"),
                               cwd=REPO, capture_output=True, text=True, timeout=120)
    assert bad_field.returncode != 0 and "batch_sise" in bad_field.stderr


@pytest.mark.parametrize(("flag", "message"), [
    ("--config.envs_per_actor=0",
     "error: bad config value: envs_per_actor=0 (must be an integer >= 1)"),
    ("--config.quantizer=int9", "error: bad quantizer spec 'int9'"),
    ("--config.actor_runtime=tflite", "error: unknown actor runtime 'tflite'; valid:"),
])
def test_cli_reports_a_bad_value_in_one_line_and_writes_nothing(tmp_path, flag, message):
    proc = subprocess.run(_cli(tmp_path / "run", flag), cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(message), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "run").exists()


def test_sigint_stops_cleanly_and_keeps_a_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(_cli(run_dir, "--config.max_actor_steps=1000000"), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        evals = read_jsonl(run_dir / "eval.jsonl") if (run_dir / "eval.jsonl").exists() else []
        if len(evals) >= 3:
            break
        time.sleep(0.5)
    os.kill(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["interrupted"] and summary["actor_steps"] >= 1000
    assert any((run_dir / "checkpoints").iterdir())


def test_same_seed_reproduces_the_run(tmp_path):
    returns = []
    for name in ("a", "b"):
        run_experiment(tiny_dqn(tmp_path / name, steps=1000))
        returns.append([e["eval_return"] for e in read_jsonl(tmp_path / name / "eval.jsonl")])
    assert returns[0] == returns[1]
