"""experiments.learning_check: what a learning run's row says, from logs written by hand."""

from __future__ import annotations

import json
from pathlib import Path

from experiments import learning_check


def write_run(root: Path, quantizer: str, returns: list[tuple[float, float]],
              drift: list[float]) -> Path:
    run = root / f"{quantizer}_seed0"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(
        {"quantizer": quantizer, "seed": 0, "eval_episodes": 10}))
    (run / "summary.json").write_text(json.dumps({"learner_steps": 900, "wall_time_s": 12.0}))
    rows = []
    for i, (deployed, fp32) in enumerate(returns):
        row = {"actor_steps": 1000 * i, "learner_steps": 100 * i, "wall_time_s": float(i),
               "eval_return": deployed}
        if quantizer != "fp32":
            row["eval_return_fp32"] = fp32
        rows.append(row)
    (run / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    key = ("policy_drift_disagreement/" + quantizer)
    (run / "learner.jsonl").write_text("".join(
        json.dumps({"actor_steps": i, key: d}) + "\n" for i, d in enumerate(drift)))
    return run


def test_a_run_row_counts_holds_precision_losses_and_late_drift(tmp_path):
    returns = [(20, 20), (500, 500), (200, 500), (480, 490), (500, 500), (300, 310), (500, 500)]
    run = write_run(tmp_path, "int8", returns, drift=[0.5, 0.4, 0.1, 0.3])
    row = learning_check.summarize_run(run, threshold=475)
    assert row["first_hit_actor_steps"] == 1000 and row["final_return"] == 500
    # The last 5 evaluations: 200, 480, 500, 300, 500 -> three at or above 475.
    assert (row["held_last"], row["held_window"]) == (3, 5)
    # Only the evaluation at 2,000 steps had fp32 at the target and the package below it.
    assert row["deployed_below_fp32_at"] == 1 and row["evaluations"] == 7
    assert row["late_policy_drift"] == (0.1 + 0.3) / 2
    totals = learning_check.summarize([row, row], threshold=475, within_steps=1000)
    assert totals["int8"] == {"seeds": 2, "reached_within": 2, "final_at_threshold": 2,
                              "held_last": 6, "held_window": 10}
    text = learning_check.markdown([row], totals, 475, 1000, "cmd")
    assert "| 3 / 5 | 1 / 7 | 0.2000 |" in text


def test_fp32_actors_have_no_precision_loss_column(tmp_path):
    run = write_run(tmp_path, "fp32", [(10, 0), (480, 0)], drift=[])
    row = learning_check.summarize_run(run, threshold=475)
    assert row["deployed_below_fp32_at"] is None and row["late_policy_drift"] is None
    assert (row["held_last"], row["held_window"]) == (1, 2)


def test_a_resumed_run_counts_each_evaluation_once(tmp_path):
    # Killed after logging 3,000 and 4,000 past its 2,000-step checkpoint, then resumed: the
    # lost branch's rows (200 at 3,000, 100 at 4,000) must not count.
    run = write_run(tmp_path, "int8", [(20, 20), (500, 500), (500, 500)], drift=[])
    lost = [{"actor_steps": 3000, "eval_return": 200, "eval_return_fp32": 500},
            {"actor_steps": 4000, "eval_return": 100, "eval_return_fp32": 500}]
    resumed = [{"actor_steps": 3000, "eval_return": 490, "eval_return_fp32": 500},
               {"actor_steps": 4000, "eval_return": 480, "eval_return_fp32": 480}]
    with (run / "eval.jsonl").open("a") as f:
        for r in lost + resumed:
            f.write(json.dumps({"learner_steps": 0, "wall_time_s": 0.0, **r}) + "\n")
    row = learning_check.summarize_run(run, threshold=475)
    assert row["evaluations"] == 5 and row["held_last"] == 4
    assert row["deployed_below_fp32_at"] == 0


def test_a_runs_row_and_report_show_its_resumes(tmp_path):
    run = write_run(tmp_path, "int8", [(20, 20), (480, 490), (500, 500)], drift=[])
    assert learning_check.summarize_run(run, threshold=475)["resumes"] == []
    (run / "resumes.jsonl").write_text(json.dumps(
        {"actor_steps": 2000, "changed": {"max_actor_steps": [2000, 3000]}, "added": []}) + "\n")
    row = learning_check.summarize_run(run, threshold=475)
    assert row["resumes"] == [{"actor_steps": 2000, "changed": ["max_actor_steps"]}]
    assert row["mean_last"] == (20 + 480 + 500) / 3
    totals = learning_check.summarize([row], threshold=475, within_steps=3000)
    assert "at 2,000 (max_actor_steps) |" in learning_check.markdown([row], totals, 475, 3000, "c")


def test_kept_records_are_copied_as_each_run_ends(tmp_path, monkeypatch):
    """--keep_records: a grid whose second run dies has kept the first run's records, and the
    kept copies are finished runs that the report reads as it read the originals."""
    import pytest

    from configs import dqn_actorq
    from launchpad_programs import study_runs

    def fake_run(run_config, path, reuse):
        if run_config.quantizer == "fp32":
            raise RuntimeError("machine lost")
        run = write_run(path.parent, run_config.quantizer,
                        [(20, 20), (500, 500), (480, 490)], drift=[0.1, 0.2])
        (run / "summary.json").write_text(json.dumps(
            {"learner_steps": 900, "wall_time_s": 12.0, "interrupted": False}))
        return run

    monkeypatch.setattr(study_runs, "run_or_load", fake_run)
    keep = tmp_path / "docs"
    with pytest.raises(RuntimeError, match="machine lost"):
        study_runs.run_grid(dqn_actorq.get_config("cartpole_small"), ["int8", "fp32"], [0],
                            tmp_path / "runs", keep=keep)
    assert sorted(p.name for p in keep.iterdir()) == ["int8_seed0"]
    assert sorted(p.name for p in (keep / "int8_seed0").iterdir()) == [
        "config.json", "eval.jsonl", "learner.jsonl", "summary.json"]
    kept = learning_check.summarize_run(keep / "int8_seed0", threshold=475)
    original = learning_check.summarize_run(tmp_path / "runs" / "int8_seed0", threshold=475)
    assert kept.pop("run_dir") != original.pop("run_dir") and kept == original


def test_a_stopped_runs_records_so_far_are_kept(tmp_path, monkeypatch):
    """--keep_records and a stop (SIGTERM): the stopped run's evaluations so far are copied too,
    marked unfinished, so that losing its run directory does not lose them; a run stopped before
    it wrote its config leaves nothing."""
    import pytest

    from actorq.analysis.runs import run_status
    from configs import dqn_actorq
    from launchpad_programs import study_runs

    def stopped_run(run_config, path, reuse):
        if run_config.quantizer == "fp32":
            raise study_runs.RunInterrupted("stop")
        write_run(path.parent, run_config.quantizer, [(20, 20), (500, 500)], drift=[0.1])
        (path / "summary.json").write_text(json.dumps(
            {"learner_steps": 100, "wall_time_s": 1.0, "interrupted": True}))
        raise study_runs.RunInterrupted("stop")

    monkeypatch.setattr(study_runs, "run_or_load", stopped_run)
    keep = tmp_path / "docs"
    for quantizer in ("int8", "fp32"):
        with pytest.raises(study_runs.RunInterrupted):
            study_runs.run_grid(dqn_actorq.get_config("cartpole_small"), [quantizer], [0],
                                tmp_path / "runs", keep=keep)
    assert sorted(p.name for p in keep.iterdir()) == ["int8_seed0"]
    assert run_status(keep / "int8_seed0") == "partial"
    kept = learning_check.summarize_run(keep / "int8_seed0", threshold=475)
    assert kept["evaluations"] == 2 and kept["final_return"] == 500
