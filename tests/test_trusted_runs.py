"""Runs that can be trusted after --resume: the resumed config is the run's own (only an
allowlist may change, and what changed is recorded), and a damaged checkpoint falls back to the
newest intact pair instead of killing the resume."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from actorq.checkpointing import Checkpointer, NoIntactCheckpointError
from actorq.metrics.loggers import read_events, read_jsonl, read_resumes
from actorq.replay import ArraySpec, MinSize, Table, Uniform
from configs import dqn_actorq
from launchpad_programs.launch import run_experiment
from launchpad_programs.run_directory import (
    RESUMABLE_KEYS,
    ConfigMismatchError,
    RunDirectory,
    RunDirectoryError,
    resume_differences,
)

REPO = Path(__file__).resolve().parents[1]
STEPS = 1500


def tiny_dqn(run_dir: Path, steps: int = STEPS):
    """The smallest CartPole DQN run that saves three checkpoints (two kept)."""
    config = dqn_actorq.get_config("cartpole_small")
    config.run_dir = str(run_dir)
    config.max_actor_steps = steps
    config.eval_every_steps = 1000
    config.eval_episodes = 1
    config.checkpoint_every_steps = 500
    config.track_energy = False
    config.replay.min_size = 200
    return config


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("base") / "run"
    summary = run_experiment(tiny_dqn(run))
    assert summary["actor_steps"] == STEPS
    return run


@pytest.fixture
def run_copy(finished_run, tmp_path) -> Path:
    """A private copy of the finished run (each test may damage or resume it)."""
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    saved = json.loads((run / "config.json").read_text())
    saved["run_dir"] = str(run)  # as if made here (a moved run records run_dir as changed)
    (run / "config.json").write_text(json.dumps(saved, indent=2))
    return run


def checkpoint_steps(run: Path) -> list[int]:
    return sorted(int(p.name) for p in (run / "checkpoints").iterdir() if p.name.isdigit())


def replay_steps(run: Path) -> list[int]:
    return sorted(int(p.name.removeprefix("replay_"))
                  for p in (run / "checkpoints").glob("replay_*"))


def replay_size(run: Path, step: int) -> int:
    meta = json.loads((run / "checkpoints" / f"replay_{step}" / "meta.json").read_text())
    return len(meta["keys"])


def learner_steps_at(run: Path, step: int) -> int:
    from actorq.analysis.trained_policy import load_trained_policy

    return load_trained_policy(run, step=step).learner_steps


def truncate(path: Path) -> None:
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


# ------------------------------------------------------------------ A. the config of a resume


def test_resume_with_another_batch_size_fails_naming_it(run_copy):
    config_json = (run_copy / "config.json").read_text()
    config = tiny_dqn(run_copy, steps=STEPS + 500)
    config.learner.batch_size = 16
    with pytest.raises(ConfigMismatchError, match=r"learner\.batch_size \(64 -> 16\)") as info:
        run_experiment(config, resume=True)
    message = str(info.value)
    assert "\n" not in message and "max_actor_steps" in message.split("only")[1]
    assert "learner.batch_size" in message.split("only")[0]
    assert "max_actor_steps (" not in message  # an allowed change is not listed as a difference
    assert isinstance(info.value, ValueError)
    assert (run_copy / "config.json").read_text() == config_json
    assert read_resumes(run_copy) == []
    assert checkpoint_steps(run_copy)[-1] == STEPS  # nothing ran


@pytest.mark.parametrize(("key", "value"), [
    ("learning_rate", 1e-4),
    ("hidden_sizes", (64, 64)),
    ("discount", 0.9),
])
def test_resume_with_another_learner_setting_fails_naming_it(run_copy, key, value):
    config = tiny_dqn(run_copy)
    old = config.learner[key]
    config.learner[key] = value
    with pytest.raises(ValueError, match=rf"learner\.{key} \(") as info:
        run_experiment(config, resume=True)
    assert f"learner.{key} ({json.dumps(list(old) if isinstance(old, tuple) else old)} -> " \
        in str(info.value)
    assert read_resumes(run_copy) == []


def test_every_difference_is_named_at_once(run_copy):
    config = tiny_dqn(run_copy)
    config.learner.batch_size = 16
    config.learner.learning_rate = 0.01
    config.seed = 3
    with pytest.raises(ConfigMismatchError) as info:
        run_experiment(config, resume=True)
    named = str(info.value).split("; only")[0]
    for text in ("learner.batch_size (64 -> 16)", "learner.learning_rate (0.001 -> 0.01)",
                 "seed (0 -> 3)"):
        assert text in named


def test_resume_with_a_larger_budget_records_the_change(run_copy):
    config_json = (run_copy / "config.json").read_text()
    config = tiny_dqn(run_copy, steps=STEPS + 500)
    config.eval_episodes = 2
    summary = run_experiment(config, resume=True)
    assert summary["actor_steps"] == STEPS + 500
    assert (run_copy / "config.json").read_text() == config_json  # the original, untouched
    (record,) = read_resumes(run_copy)
    assert record["changed"] == {"max_actor_steps": [STEPS, STEPS + 500],
                                 "eval_episodes": [1, 2]}
    assert record["added"] == []
    assert record["actor_steps"] == STEPS and record["checkpoint_step"] == STEPS
    assert record["skipped_checkpoints"] == []
    assert isinstance(record["time"], float) and record["iso_time"][:2] == "20"
    assert read_events(run_copy, "checkpoint_skipped") == []


def test_a_field_added_after_the_run_started_is_accepted_and_recorded(run_copy):
    saved = json.loads((run_copy / "config.json").read_text())
    del saved["keep_checkpoints"]  # a run from before the field existed
    (run_copy / "config.json").write_text(json.dumps(saved, indent=2))
    summary = run_experiment(tiny_dqn(run_copy), resume=True)  # budget spent: final eval only
    assert summary["actor_steps"] == STEPS
    (record,) = read_resumes(run_copy)
    assert record["changed"] == {} and record["added"] == ["keep_checkpoints"]
    assert record["actor_steps"] == STEPS


def test_an_added_field_set_away_from_the_old_code_fails_naming_it(run_copy):
    """A run from before ``keep_checkpoints`` existed ran with 2; a resume may not claim another
    value for a field the run never had, but may state the old one."""
    saved = json.loads((run_copy / "config.json").read_text())
    del saved["keep_checkpoints"]
    del saved["learner"]["target_update_tau"]
    (run_copy / "config.json").write_text(json.dumps(saved, indent=2))
    config = tiny_dqn(run_copy)
    config.learner.target_update_tau = 0.01
    with pytest.raises(ConfigMismatchError,
                       match=r"learner\.target_update_tau \(absent, i\.e\. 0\.0 -> 0\.01\)"):
        run_experiment(config, resume=True)
    assert read_resumes(run_copy) == []
    config.learner.target_update_tau = 0.0  # the value the run had: accepted, recorded as added
    run_experiment(config, resume=True)
    (record,) = read_resumes(run_copy)
    assert record["added"] == ["keep_checkpoints", "learner.target_update_tau"]


def test_resume_differences_rules():
    saved = {"a": 1, "learner": {"batch_size": 64, "gone": True}, "max_actor_steps": 10,
             "track_energy": True, "flag": True}
    current = {"a": 1, "learner": {"batch_size": 64, "new": 0}, "max_actor_steps": 20,
               "track_energy": False, "flag": 1}
    changed, added, forbidden = resume_differences(saved, current)
    assert changed == {"max_actor_steps": [10, 20], "track_energy": [True, False]}
    assert added == ["learner.new"]
    assert set(forbidden) == {"learner.gone", "flag"}  # gone now; a bool turned into a count
    assert resume_differences({"x": 1.0}, {"x": 1}) == ({}, [], {})
    assert "keep_checkpoints" in RESUMABLE_KEYS and "num_actors" in RESUMABLE_KEYS


def test_run_directory_errors_are_value_errors(tmp_path, finished_run):
    with pytest.raises(FileExistsError) as exists:
        RunDirectory(finished_run, tiny_dqn(finished_run), resume=False)
    # check() is the constructor's checks without writing anything (the CLI runs it first).
    assert RunDirectory.check(finished_run, tiny_dqn(finished_run, STEPS + 1), resume=True) \
        == {"changed": {"max_actor_steps": [STEPS, STEPS + 1]}, "added": []}
    with pytest.raises(FileNotFoundError) as missing:
        RunDirectory(tmp_path / "none", tiny_dqn(tmp_path / "none"), resume=True)
    for error in (exists.value, missing.value):
        assert isinstance(error, RunDirectoryError) and isinstance(error, ValueError)
    bad = tiny_dqn(tmp_path / "bad")
    bad.keep_checkpoints = 0
    with pytest.raises(ValueError, match="keep_checkpoints"):
        run_experiment(bad)
    assert not (tmp_path / "bad").exists()


# ------------------------------------------------------------- B. the newest intact pair wins


def test_two_pairs_are_kept(finished_run):
    steps = checkpoint_steps(finished_run)
    assert len(steps) == 2 and steps[-1] == STEPS
    assert steps[0] >= 1000  # the one near 500 was pruned, with its replay
    assert replay_steps(finished_run) == steps


def test_keep_checkpoints_one_keeps_one_pair(run_copy):
    config = tiny_dqn(run_copy, steps=STEPS + 600)
    config.keep_checkpoints = 1
    run_experiment(config, resume=True)
    assert checkpoint_steps(run_copy) == [STEPS + 600] == replay_steps(run_copy)
    assert read_resumes(run_copy)[0]["changed"]["keep_checkpoints"] == [2, 1]


def _assert_fell_back(run: Path, newest: int, older: int, part: str, reason: str,
                      expected_replay: int, expected_learner: int) -> None:
    (skip,) = read_events(run, "checkpoint_skipped")
    assert skip["step"] == newest and skip["path"] == part and skip["restored_step"] == older
    assert reason in skip["reason"]
    (record,) = read_resumes(run)
    assert record["checkpoint_step"] == older and record["actor_steps"] == older
    assert record["skipped_checkpoints"] == [newest]
    assert record["replay_size"] == expected_replay
    assert record["learner_steps"] == expected_learner
    # The damaged pair was set aside for inspection; the run saved that step again.
    aside = run / "checkpoints_skipped"
    assert (aside / str(newest)).is_dir() and (aside / f"replay_{newest}").is_dir()
    assert checkpoint_steps(run)[-1] == STEPS and replay_steps(run) == checkpoint_steps(run)
    # The continued run's learner log starts from the restored pair's counters.
    rows = read_jsonl(run / "learner.jsonl")
    assert rows[-1]["actor_steps"] == STEPS
    assert Checkpointer(run / "checkpoints").latest_step() == STEPS


def test_a_damaged_newest_replay_falls_back_to_the_previous_pair(run_copy):
    older, newest = checkpoint_steps(run_copy)
    expected = replay_size(run_copy, older), learner_steps_at(run_copy, older)
    truncate(run_copy / "checkpoints" / f"replay_{newest}" / "items.npz")
    summary = run_experiment(tiny_dqn(run_copy), resume=True)
    assert summary["actor_steps"] == STEPS and not summary["interrupted"]
    _assert_fell_back(run_copy, newest, older, f"checkpoints/replay_{newest}/items.npz",
                      "zip", *expected)


def test_a_damaged_newest_learner_checkpoint_falls_back_to_the_previous_pair(run_copy):
    older, newest = checkpoint_steps(run_copy)
    expected = replay_size(run_copy, older), learner_steps_at(run_copy, older)
    data = list((run_copy / "checkpoints" / str(newest) / "learner").rglob("d/*"))
    assert data
    for path in data:
        truncate(path)
    summary = run_experiment(tiny_dqn(run_copy), resume=True)
    assert summary["actor_steps"] == STEPS
    _assert_fell_back(run_copy, newest, older, f"checkpoints/{newest}/", "", *expected)


def test_no_intact_checkpoint_fails_in_one_line(run_copy):
    steps = checkpoint_steps(run_copy)
    for step in steps:
        truncate(run_copy / "checkpoints" / f"replay_{step}" / "items.npz")
    with pytest.raises(NoIntactCheckpointError) as info:
        run_experiment(tiny_dqn(run_copy, steps=STEPS + 500), resume=True)
    message = str(info.value)
    assert "\n" not in message and message.startswith("no intact checkpoint in ")
    for step in steps:
        assert f"step {step} (replay_{step}/items.npz: File is not a zip file)" in message
    assert isinstance(info.value, ValueError)
    assert [e["step"] for e in read_events(run_copy, "checkpoint_skipped")] == steps[::-1]
    assert read_resumes(run_copy) == []
    assert checkpoint_steps(run_copy) == steps  # nothing moved when nothing restored
    assert not (run_copy / "checkpoints_skipped").exists()


# ---------------------------------------------- B, unit: the Checkpointer on a tiny table


SIG = {"x": ArraySpec((2,), np.float32)}


def _table() -> Table:
    return Table("t", 10, SIG, Uniform(), MinSize(1), seed=0)


def _state(value: float) -> dict[str, np.ndarray]:
    return {"w": np.full((3,), value, np.float32), "steps": np.asarray(int(value), np.int32)}


@pytest.mark.parametrize("damage", ["meta", "items", "missing_replay", "counters"])
def test_checkpointer_falls_back_and_leaves_no_partial_table(tmp_path, damage):
    checkpointer = Checkpointer(tmp_path / "ck", max_to_keep=2)
    table = _table()
    for step in (1, 2):
        table.insert({"x": np.full(2, step, np.float32)})
        checkpointer.save(step, _state(step), {"actor_steps": step}, table)
    checkpointer.close()
    newest = tmp_path / "ck" / "replay_2"
    if damage == "meta":
        (newest / "meta.json").write_text("{")
    elif damage == "items":
        truncate(newest / "items.npz")
    elif damage == "missing_replay":
        shutil.rmtree(newest)
    else:
        (tmp_path / "ck" / "2" / "counters" / "metadata").write_text('{"actor_steps": 7}')
    fresh = _table()
    checkpointer = Checkpointer(tmp_path / "ck", max_to_keep=2)
    restored = checkpointer.restore_newest_valid(_state(0), fresh)
    assert restored is not None and restored.step == 1
    assert restored.counters == {"actor_steps": 1}
    np.testing.assert_array_equal(restored.learner_state["w"], np.full(3, 1.0, np.float32))
    assert fresh.size == 1 and fresh.num_inserts == 1  # step 1's replay, nothing of step 2's
    (skip,) = restored.skipped
    assert skip.step == 2
    assert skip.path == {"meta": "replay_2/meta.json", "items": "replay_2/items.npz",
                         "missing_replay": "replay_2/", "counters": "2/"}[damage]
    assert checkpointer.all_steps() == [1]  # step 2 set aside: it can be saved again
    checkpointer.save(2, _state(2), {"actor_steps": 2}, fresh)
    assert checkpointer.all_steps() == [1, 2]
    checkpointer.close()


def test_checkpointer_rejects_a_state_of_another_shape(tmp_path):
    checkpointer = Checkpointer(tmp_path, max_to_keep=1)
    checkpointer.save(5, _state(5), {"actor_steps": 5})
    template = {"w": np.zeros((4,), np.float32), "steps": np.asarray(0, np.int32)}
    with pytest.raises(NoIntactCheckpointError, match=r"step 5 \(5/: "):
        checkpointer.restore_newest_valid(template)
    checkpointer.close()
    with pytest.raises(ValueError, match="max_to_keep"):
        Checkpointer(tmp_path, max_to_keep=0)


def test_cli_resume_with_another_config_ends_in_one_error_line(run_copy):
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.dqn_actorq",
         "--config=configs/dqn_actorq.py:cartpole_small", f"--config.run_dir={run_copy}",
         "--config.max_actor_steps=54000", "--config.learner.batch_size=16", "--resume"],
        cwd=REPO, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    output = proc.stdout + proc.stderr
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert proc.returncode != 0 and "Traceback" not in output, output[-3000:]
    assert len(errors) == 1 and "learner.batch_size (64 -> 16)" in errors[0], output[-3000:]
    assert read_resumes(run_copy) == []
