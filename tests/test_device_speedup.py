"""The prepared device run of QuaRL Table 4 (``benchmarks/device_speedup.py``).

The dry run takes the device run's whole path on this CPU (learner_device auto, tiny networks and
budgets); the other tests check its parts: configs, the wall budget and the deadline stop.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks import device_speedup as ds

REPO = Path(__file__).resolve().parents[1]
TASK_NAMES = ["dqn_cartpole", "dqn_acrobot", "d4pg_walker_stand", "d4pg_cartpole_balance"]


def test_configs_are_the_paper_presets_in_the_papers_setting(tmp_path: Path) -> None:
    args = ds.parse_args(["--num_actors=12", "--learner_device=gpu", "--seed=3",
                          "--set", "dqn:learner.batch_size=128", "--set", "pull_period=500"])
    assert [t.name for t in args.task_list] == TASK_NAMES
    from configs import d4pg_actorq, dqn_actorq

    for task in args.task_list:
        preset = (dqn_actorq if task.agent == "dqn" else d4pg_actorq).get_config(task.preset)
        config = ds.make_run_config(task, "int8", args, tmp_path / task.name)
        assert config.launcher == "local" and config.num_actors == 12
        assert config.learner_device == "gpu" and config.seed == 3
        assert config.quantizer == "int8" and config.actor_quantizers == ""
        assert config.replay.rate_limiter == "none" and config.replay.max_times_sampled == 16
        assert config.eval_fp32 is False
        # The paper's networks and budgets stay; the evaluator gets ~40 points per budget.
        assert config.max_actor_steps == preset.max_actor_steps
        assert config.eval_every_steps == preset.max_actor_steps // 40
        if task.agent == "dqn":
            assert config.learner.hidden_sizes == (2048, 2048, 2048)
            assert config.learner.batch_size == 128  # scoped --set
        else:
            assert config.learner.policy_hidden_sizes == (2048, 2048, 2048)
            assert config.learner.batch_size == preset.learner.batch_size
        assert config.pull_period == 500  # unscoped --set
        assert config.run_dir == str(tmp_path / task.name)


def test_dry_run_settings_and_bad_overrides(tmp_path: Path) -> None:
    args = ds.parse_args(["--dry-run"])
    assert args.learner_device == "auto" and args.total_minutes == 2.5
    config = ds.make_run_config(ds.TASKS[2], "fp32", args, tmp_path)
    assert config.learner.policy_hidden_sizes == (32, 32) and config.max_actor_steps == 2000
    bad = ds.parse_args(["--dry-run", "--set", "learner.bogus=1"])
    with pytest.raises(KeyError, match="learner.bogus"):
        ds.make_run_config(ds.TASKS[0], "fp32", bad, tmp_path)
    assert ds.parse_sets(["a.b=(1, 2)", "c=none", "d=1e-3"]) == {
        "a.b": (1, 2), "c": "none", "d": 1e-3}
    with pytest.raises(ValueError, match="key=value"):
        ds.parse_sets(["novalue"])
    assert ds.default_num_actors() >= 2


def test_budget_shares_what_is_left_between_the_remaining_runs() -> None:
    now = [0.0]
    budget = ds.Budget(540.0, report_reserve_s=20.0, clock=lambda: now[0])
    assert budget.run_share(8) == pytest.approx(65.0)
    now[0] = 100.0  # the first task took 100 s of its 130: the rest is shared by 6 runs
    assert budget.run_share(6) == pytest.approx(70.0)
    now[0] = 600.0
    assert budget.run_share(2) == 0.0
    # Set-up and stop come out of the share; never below the minimum acting time.
    assert ds.acting_seconds(65.0, setup_s=15.0, stop_s=5.0, minimum_s=20.0) == 45.0
    assert ds.acting_seconds(0.0, setup_s=15.0, stop_s=5.0, minimum_s=20.0) == 20.0


def test_deadline_stop_counts_acting_time_from_the_drivers_loop() -> None:
    """The stop is sent ``acting_s`` after the run's loop started (never during set-up), and
    only to a handler other than its own (the driver's)."""
    received: list[float] = []
    original = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda signum, frame: received.append(time.monotonic()))
    started = threading.Event()
    try:
        with ds.DeadlineStop(0.3, started.is_set, resend_s=0.1) as stop:
            own_handler = signal.getsignal(signal.SIGTERM)
            time.sleep(0.6)
            assert not stop.fired and stop.started_at is None  # still setting up
            started.set()
            time.sleep(0.6)
            assert stop.started_at is not None
            assert not stop.fired  # acting time is over, but only its own handler is there
            driver_got: list[float] = []
            signal.signal(signal.SIGTERM, lambda signum, frame: driver_got.append(
                time.monotonic()))
            deadline = time.monotonic() + 10.0
            while not driver_got and time.monotonic() < deadline:
                time.sleep(0.05)
            assert driver_got and stop.fired
            assert stop.fired_at is not None and stop.fired_at - stop.started_at >= 0.3
            signal.signal(signal.SIGTERM, own_handler)  # the driver restores it on return
        assert signal.getsignal(signal.SIGTERM) is not own_handler
    finally:
        time.sleep(0.2)  # let a signal in flight reach the recording handler
        signal.signal(signal.SIGTERM, original)


def test_table_rows_read_the_analysis_rows() -> None:
    records = [
        ds.RunRecord("dqn_cartpole", "dqn", "cartpole", q, f"/r/{q}", 60.0, 40.0, num_evals=5)
        for q in ("fp32", "int8")
    ]
    analysis: list[dict[str, Any]] = [
        {"agent": "dqn", "task": "cartpole", "precision": "fp32", "threshold": 95.0,
         "quant_time_wall": 40.0, "quant_reached_wall": 1, "final_return_mean": 100.0},
        {"agent": "dqn", "task": "cartpole", "precision": "int8", "threshold": 95.0,
         "baseline_best": 100.0, "fp32_time_wall": 40.0, "fp32_reached_wall": 1,
         "quant_time_wall": 20.0, "quant_reached_wall": 1, "speedup_wall": 2.0,
         "status_wall": "ok", "speedup_steps": None, "status_steps": "quant not reached",
         "energy_ratio": 1.5, "final_return_mean": 98.0},
    ]
    tasks = [ds.TASKS[0], ds.TASKS[1]]
    rows = ds.table_rows(tasks, records, analysis)
    assert rows[0]["speedup_wall"] == 2.0 and rows[0]["int8_time_s"] == 20.0
    assert rows[1]["fp32_stop"] == "not run"
    text = ds.markdown(rows, records, {"learner_device_used": "gpu:0", "num_actors": 12,
                                       "seed": 0, "dry_run": False})
    assert "| dqn_cartpole | 12 | 95.00 | 40.0 | 20.0 | 2.00x | quant not reached | 1.50 |" in text
    assert "| dqn_acrobot | 12 | — | no evaluations | no evaluations |" in text


def test_actor_scaling_rows_compare_at_the_steps_every_run_reached(tmp_path: Path) -> None:
    """Hand-made eval logs: 1 and 2 actors, fp32 and int8. The fixed step count is the most that
    every run reached (the slowest run's last evaluation); times are read at it."""
    logs = {(1, "fp32"): [(0, 1.0), (100, 20.0), (200, 40.0)],
            (1, "int8"): [(0, 1.0), (100, 10.0), (200, 20.0), (300, 30.0)],
            (2, "fp32"): [(0, 1.0), (100, 12.0), (200, 24.0), (400, 48.0)],
            (2, "int8"): [(0, 1.0), (200, 8.0), (400, 16.0)]}
    records = []
    for (count, q), points in logs.items():
        run_dir = tmp_path / f"actors{count}" / q
        run_dir.mkdir(parents=True)
        (run_dir / "eval.jsonl").write_text("".join(
            json.dumps({"actor_steps": s, "wall_time_s": t, "eval_return": 1.0}) + "\n"
            for s, t in points) + "{truncated")
        records.append(ds.RunRecord("dqn_cartpole", "dqn", "cartpole", q, str(run_dir), 60.0,
                                    40.0, num_evals=len(points), num_actors=count))
    table = [{"task": "dqn_cartpole", "num_actors": 1, "target_return": 95.0, "fp32_time_s": 40.0,
              "fp32_reached": 1, "int8_time_s": None, "int8_reached": 0},
             {"task": "dqn_cartpole", "num_actors": 2, "target_return": 90.0, "fp32_time_s": 30.0,
              "fp32_reached": 1, "int8_time_s": 10.0, "int8_reached": 1}]
    rows = ds.actor_scaling_rows([ds.TASKS[0]], records, table)
    assert [(r["num_actors"], r["steps"]) for r in rows] == [(1, 200), (2, 200)]
    assert (rows[0]["fp32_time_to_steps_s"], rows[0]["int8_time_to_steps_s"]) == (40.0, 20.0)
    assert rows[0]["speedup_to_steps"] == 2.0 and rows[1]["speedup_to_steps"] == 3.0
    assert rows[0]["speedup_to_target"] is None and rows[1]["speedup_to_target"] == 3.0
    text = ds.actor_scaling_markdown(rows)
    assert ("| dqn_cartpole | 1 | 200 | 40.0 | 20.0 | 2.00 | 95.00 | 40.0 | not reached | — |"
            in text)
    assert ds.plot_actor_scaling(rows, tmp_path / "s.png").stat().st_size > 1000
    with pytest.raises(SystemExit):
        ds.parse_args(["--actor_counts=1,0"])
    assert ds.parse_args(["--actor_counts=1,2,4,8,12"]).actor_count_list == [1, 2, 4, 8, 12]


@pytest.mark.slow
def test_dry_run_prints_table_4_and_actor_scaling(tmp_path: Path) -> None:
    """The whole device script on this CPU, as the device runs its actor-scaling sweep: every
    (actor count, precision) runs with rate_limiter none on the requested learner device, and the
    Table 4 rows and the actor-scaling table are printed and written. One task keeps it to the
    CI time of one dry run; every task's settings are checked above."""
    import jax

    tasks, counts = ["dqn_cartpole"], [1, 2]
    out = tmp_path / "device"
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.device_speedup", "--dry-run", f"--out_dir={out}",
         f"--tasks={','.join(tasks)}", "--actor_counts=1,2", "--total_minutes=1.5"],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-4000:]
    print(proc.stdout[-4000:])
    print(f"dry run: {elapsed:.0f} s")
    stdout = proc.stdout
    assert "| task | actors | target return | fp32 time (s) | int8 time (s) | speedup" in stdout
    assert "## Actor scaling (QuaRL Fig. 11)" in stdout
    for name in tasks:
        for count in counts:
            assert f"| {name} | {count} | " in stdout
    assert (out / "device_speedup.md").read_text() in stdout
    for count in counts:
        assert (out / f"actors{count}" / "speedup.md").is_file() or "no evaluations" in stdout

    report = json.loads((out / "device_speedup.json").read_text())
    assert [(row["task"], row["num_actors"]) for row in report["table"]] == [
        (t, c) for c in counts for t in tasks]
    scaling = json.loads((out / "actor_scaling.json").read_text())["rows"]
    assert [(r["task"], r["num_actors"]) for r in scaling] == [(t, c) for t in tasks
                                                              for c in counts]
    # The fixed step count exists exactly when every run evaluated (on a loaded machine a run's
    # short dry-run share may end before its first evaluation); then every run has its time.
    every_run_evaluated = all(r["num_evals"] > 0 for r in report["runs"])
    for row in scaling:
        assert (row["steps"] is not None) == every_run_evaluated
        if every_run_evaluated:
            assert row["fp32_time_to_steps_s"] is not None
            assert row["int8_time_to_steps_s"] is not None
    assert (out / "actor_scaling.png").stat().st_size > 1000
    runs = report["runs"]
    assert sorted((r["task"], r["num_actors"], r["quantizer"]) for r in runs) == sorted(
        (t, c, q) for t in tasks for c in counts for q in ("fp32", "int8"))
    # auto -> JAX's default device: cpu:0 on a machine without an accelerator.
    default = jax.devices()[0]
    expected_device = f"{default.platform}:{default.id}"
    for record in runs:
        run_dir = Path(record["run_dir"])
        assert run_dir.parent.name == f"actors{record['num_actors']}"
        assert record["stop"] in ("max_actor_steps", "wall budget"), record
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["learner_device"] == expected_device
        assert record["summary"]["learner_device"] == expected_device
        config = json.loads((run_dir / "config.json").read_text())
        assert config["replay"]["rate_limiter"] == "none"
        assert config["replay"]["max_times_sampled"] == 16
        assert config["launcher"] == "local" and config["learner_device"] == "auto"
        assert config["quantizer"] == record["quantizer"]
        assert config["num_actors"] == record["num_actors"]
    assert (out / "device_speedup_logs.tar.gz").is_file()
