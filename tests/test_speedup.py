"""Tests for actorq.analysis: the paper's time-to-target speedup, report and plots."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from actorq.analysis import (
    Curve,
    RunFormatError,
    RunRecord,
    final_return,
    final_returns,
    group_runs,
    load_run,
    markdown_table,
    mean_curve,
    plot_breakdown,
    smooth,
    speedup,
    speedup_table,
    target_return,
    threshold_from_curve,
    time_to_threshold,
    write_report,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_run(
    root: Path,
    name: str,
    *,
    quantizer: str,
    seed: int,
    wall: Sequence[float],
    returns: Sequence[float],
    steps: Sequence[float] | None = None,
    agent: str = "dqn",
    task: str = "cartpole",
    energy: dict[str, Any] | None = None,
    truncated_tail: bool = False,
) -> Path:
    """Writes a run directory following the run-directory contract."""
    run_dir = root / name
    run_dir.mkdir(parents=True)
    config = {"agent": agent, "task": task, "quantizer": quantizer, "seed": seed}
    (run_dir / "config.json").write_text(json.dumps(config))
    steps = steps if steps is not None else [10.0 * t for t in wall]
    lines = [
        json.dumps(
            {
                "wall_time_s": float(t),
                "actor_steps": int(s),
                "learner_steps": int(s) // 4,
                "eval_return": float(r),
            }
        )
        for t, s, r in zip(wall, steps, returns, strict=True)
    ]
    text = "\n".join(lines) + "\n"
    if truncated_tail:
        # What a writer killed mid-record leaves behind.
        text += '{"wall_time_s": 999.0, "actor_steps": 99'
    (run_dir / "eval.jsonl").write_text(text)
    if energy is not None:
        (run_dir / "energy.json").write_text(json.dumps(energy))
    return run_dir


def step_returns(
    wall: np.ndarray, t_reach: float, high: float = 100.0, low: float = 0.0
) -> list[float]:
    """Returns ``low`` before ``t_reach`` and ``high`` from it on."""
    return [high if t >= t_reach else low for t in wall]


WALL = np.arange(0.0, 201.0, 10.0)  # 21 evals, every 10 s


def make_run(
    tmp_path: Path, name: str, quantizer: str, seed: int, t_reach: float, **kw: Any
) -> RunRecord:
    returns = kw.pop("returns", None)
    if returns is None:
        returns = step_returns(WALL, t_reach, kw.pop("high", 100.0), kw.pop("low", 0.0))
    return load_run(
        write_run(tmp_path, name, quantizer=quantizer, seed=seed, wall=WALL, returns=returns, **kw)
    )


# --- smoothing and time to threshold -------------------------------------------------------------


def test_smooth_is_trailing_mean_over_available_points() -> None:
    np.testing.assert_allclose(smooth([1.0, 2.0, 3.0, 4.0], window=2), [1.0, 1.5, 2.5, 3.5])
    np.testing.assert_allclose(smooth([1.0, 2.0, 3.0, 4.0], window=3), [1.0, 1.5, 2.0, 3.0])
    np.testing.assert_allclose(smooth([3.0, -1.0, 5.0], window=1), [3.0, -1.0, 5.0])
    # A window longer than the curve is a running mean.
    np.testing.assert_allclose(smooth([2.0, 4.0, 6.0], window=10), [2.0, 3.0, 4.0])
    assert smooth([], window=5).shape == (0,)
    with pytest.raises(ValueError, match="window"):
        smooth([1.0], window=0)


def test_time_to_threshold_first_crossing_and_none() -> None:
    x = [0.0, 10.0, 20.0, 30.0]
    y = [0.0, 50.0, 100.0, 100.0]
    assert time_to_threshold(x, y, 95.0, window=1) == 20.0
    # Smoothing delays the crossing: mean of (50, 100) = 75 < 95 at x=20; (100, 100) at x=30.
    assert time_to_threshold(x, y, 95.0, window=2) == 30.0
    assert time_to_threshold(x, y, 101.0, window=1) is None
    # Reaching exactly the threshold counts.
    assert time_to_threshold(x, y, 100.0, window=1) == 20.0


# --- the speedup metric --------------------------------------------------------------------------


def test_speedup_known_answer_wall_and_actor_steps(tmp_path: Path) -> None:
    # fp32 actors run 10 steps/s, int8 actors 20 steps/s.
    fp32 = make_run(tmp_path, "fp32", "fp32", 0, t_reach=100.0, steps=10 * WALL)
    int8 = make_run(tmp_path, "int8", "int8", 0, t_reach=40.0, steps=20 * WALL)

    wall = speedup([fp32], [int8], fraction=0.95, window=1, axis="wall_time_s")
    assert wall.threshold == pytest.approx(95.0)
    assert wall.baseline_best == pytest.approx(100.0)
    assert wall.baseline.times == (100.0,)
    assert wall.quant.times == (40.0,)
    assert wall.speedup == pytest.approx(2.5)
    assert wall.status == "ok" and not wall.not_reached

    steps = speedup([fp32], [int8], fraction=0.95, window=1, axis="actor_steps")
    assert steps.baseline.times == (1000.0,)
    assert steps.quant.times == (800.0,)
    assert steps.speedup == pytest.approx(1.25)

    with pytest.raises(ValueError, match="axis"):
        speedup([fp32], [int8], axis="learner_steps")  # type: ignore[arg-type]


def test_speedup_uses_smoothed_curve_with_default_window(tmp_path: Path) -> None:
    fp32 = make_run(tmp_path, "fp32", "fp32", 0, t_reach=100.0)
    int8 = make_run(tmp_path, "int8", "int8", 0, t_reach=40.0)
    result = speedup([fp32], [int8])  # window=10
    # The 10-eval mean first reaches 95 when all of the last 10 evals are at 100: 9 evals later.
    assert result.baseline.times == (190.0,)
    assert result.quant.times == (130.0,)
    assert result.speedup == pytest.approx(190.0 / 130.0)


def test_never_reached_is_reported_not_dropped(tmp_path: Path) -> None:
    fp32 = make_run(tmp_path, "fp32", "fp32", 0, t_reach=100.0)
    int2 = make_run(tmp_path, "int2", "int2", 0, t_reach=40.0, high=50.0)
    result = speedup([fp32], [int2], window=1)
    assert result.quant.times == (None,)
    assert result.quant.mean is None
    assert result.speedup is None
    assert result.not_reached
    assert result.status == "quant not reached"
    assert result.per_seed_speedups == (None,)
    assert result.to_dict()["not_reached"] is True

    rows = speedup_table(group_runs([fp32, int2]), window=1)
    assert [r["precision"] for r in rows] == ["fp32", "int2"]
    table = markdown_table(rows)
    int2_line = next(line for line in table.splitlines() if "| int2 |" in line)
    assert "not reached" in int2_line
    assert "quant not reached" in int2_line


def test_threshold_rule_for_positive_mixed_and_negative_curves() -> None:
    assert threshold_from_curve([0.0, 50.0, 100.0], 0.95) == pytest.approx(95.0)
    assert threshold_from_curve([-100.0, 0.0, 50.0], 0.95) == pytest.approx(47.5)
    # All-negative (MountainCar-like): 95% of the way from the worst to the best point.
    assert threshold_from_curve([-200.0, -150.0, -110.0], 0.95) == pytest.approx(-114.5)
    # 0.95 * best would be -104.5, above the best: unreachable. The rule keeps it below the best.
    assert threshold_from_curve([-200.0, -110.0], 0.95) < -110.0
    assert threshold_from_curve([-5.0, -5.0], 0.95) == pytest.approx(-5.0)
    with pytest.raises(ValueError, match="fraction"):
        threshold_from_curve([1.0], 0.0)


def test_negative_returns_speedup(tmp_path: Path) -> None:
    fp32 = make_run(tmp_path, "fp32", "fp32", 0, t_reach=150.0, high=-110.0, low=-200.0)
    int8 = make_run(tmp_path, "int8", "int8", 0, t_reach=50.0, high=-110.0, low=-200.0)
    result = speedup([fp32], [int8], window=1)
    assert result.threshold == pytest.approx(-114.5)
    assert result.baseline.times == (150.0,)
    assert result.quant.times == (50.0,)
    assert result.speedup == pytest.approx(3.0)


def test_multiple_seeds_aggregation(tmp_path: Path) -> None:
    fp32 = [
        make_run(tmp_path, "f0", "fp32", 0, t_reach=100.0),
        make_run(tmp_path, "f1", "fp32", 1, t_reach=140.0),
    ]
    int8 = [
        make_run(tmp_path, "q0", "int8", 0, t_reach=40.0),
        make_run(tmp_path, "q1", "int8", 1, t_reach=60.0),
    ]
    result = speedup(fp32, int8, window=1)
    assert result.threshold == pytest.approx(95.0)
    assert result.baseline.mean == pytest.approx(120.0)
    assert result.quant.mean == pytest.approx(50.0)
    assert result.speedup == pytest.approx(2.4)
    assert result.per_seed_speedups == pytest.approx((3.0, 2.0))
    assert result.quant.seeds == (0, 1)

    # One quantized seed never gets there: no speedup, but the reached seed is still reported.
    int8_partial = [int8[0], make_run(tmp_path, "q2", "int8", 2, t_reach=0.0, high=10.0)]
    partial = speedup(fp32, int8_partial, window=1)
    assert partial.speedup is None
    assert partial.quant.num_reached == 1 and partial.quant.num_seeds == 2
    assert partial.quant.mean == pytest.approx(40.0)
    assert partial.per_seed_speedups == pytest.approx((3.0, None))


def test_threshold_averages_seeds_before_taking_best(tmp_path: Path) -> None:
    # Seeds plateau at 100 and 80: the mean curve's best is 90, so the target is 85.5.
    runs = [
        make_run(tmp_path, "a", "fp32", 0, t_reach=50.0, high=100.0),
        make_run(tmp_path, "b", "fp32", 1, t_reach=50.0, high=80.0),
    ]
    threshold, best = target_return(runs, fraction=0.95, window=1)
    assert best == pytest.approx(90.0)
    assert threshold == pytest.approx(85.5)
    # The weaker fp32 seed never reaches the mean's target: speedup is withheld.
    result = speedup(runs, runs, window=1)
    assert result.status == "neither reached" and result.speedup is None


def test_mean_curve_interpolates_on_overlap() -> None:
    a = Curve(x=np.array([0.0, 10.0, 20.0]), y=np.array([0.0, 10.0, 20.0]))
    b = Curve(x=np.array([5.0, 15.0, 25.0]), y=np.array([0.0, 0.0, 0.0]))
    mc = mean_curve([a, b])
    np.testing.assert_allclose(mc.x, [5.0, 10.0, 15.0, 20.0])
    np.testing.assert_allclose(mc.mean, [2.5, 5.0, 7.5, 10.0])
    np.testing.assert_allclose(mc.high, [5.0, 10.0, 15.0, 20.0])
    np.testing.assert_allclose(mc.low, 0.0)


def test_final_returns_and_energy(tmp_path: Path) -> None:
    returns = list(range(20))  # last 10% = last 2 evals: (18 + 19) / 2
    run = load_run(
        write_run(tmp_path, "r", quantizer="fp32", seed=0, wall=range(20), returns=returns)
    )
    assert final_return(run) == pytest.approx(18.5)
    assert final_return(run, tail_fraction=0.0) == pytest.approx(19.0)
    other = make_run(tmp_path, "o", "fp32", 1, t_reach=0.0, high=20.5)
    fr = final_returns([run, other])
    assert fr.mean == pytest.approx(19.5) and fr.std == pytest.approx(1.0)

    e1 = {"energy_kwh": 0.4, "emissions_kg": 0.2}
    e2 = {"energy_kwh": 0.1, "emissions_kg": 0.05}
    fp32 = make_run(tmp_path, "f", "fp32", 0, t_reach=100.0, energy=e1)
    int8 = make_run(tmp_path, "q", "int8", 0, t_reach=40.0, energy=e2)
    result = speedup([fp32], [int8], window=1)
    assert result.energy is not None
    assert result.energy.energy_ratio == pytest.approx(4.0)
    assert result.energy.emissions_ratio == pytest.approx(4.0)
    no_energy = make_run(tmp_path, "q2", "int8", 1, t_reach=40.0)
    assert speedup([fp32], [int8, no_energy], window=1).energy is None


def test_speedup_rejects_mixed_experiments(tmp_path: Path) -> None:
    fp32 = make_run(tmp_path, "f", "fp32", 0, t_reach=100.0)
    other = make_run(tmp_path, "q", "int8", 0, t_reach=40.0, task="acrobot")
    with pytest.raises(ValueError, match="mix"):
        speedup([fp32], [other])
    with pytest.raises(ValueError, match="fp32"):
        speedup([], [other])


# --- loading -------------------------------------------------------------------------------------


def test_load_run_skips_truncated_last_line(tmp_path: Path) -> None:
    run_dir = write_run(
        tmp_path,
        "r",
        quantizer="int8",
        seed=3,
        wall=[0.0, 1.0],
        returns=[1.0, 2.0],
        truncated_tail=True,
    )
    run = load_run(run_dir)
    assert (run.agent, run.task, run.quantizer, run.seed) == ("dqn", "cartpole", "int8", 3)
    np.testing.assert_allclose(run.eval_return, [1.0, 2.0])
    np.testing.assert_allclose(run.actor_steps, [0.0, 10.0])
    np.testing.assert_allclose(run.learner_steps, [0.0, 2.0])
    assert run.energy is None
    assert run.curve("actor_steps").x.tolist() == [0.0, 10.0]


def test_load_run_errors_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope"):
        load_run(tmp_path / "nope")

    run_dir = write_run(tmp_path, "r", quantizer="fp32", seed=0, wall=[0.0], returns=[1.0])
    (run_dir / "eval.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match=r"eval\.jsonl"):
        load_run(run_dir)

    (run_dir / "eval.jsonl").write_text("")
    with pytest.raises(RunFormatError, match=r"no evaluations in .*eval\.jsonl"):
        load_run(run_dir)

    # Only a truncated line: nothing usable.
    (run_dir / "eval.jsonl").write_text('{"wall_time_s": 1')
    with pytest.raises(RunFormatError, match="no evaluations"):
        load_run(run_dir)

    # A corrupt line that is not the last one is an error, not silently skipped.
    good = json.dumps({"wall_time_s": 0.0, "actor_steps": 0, "learner_steps": 0, "eval_return": 1})
    (run_dir / "eval.jsonl").write_text(f"{good}\n{{bad\n{good}\n")
    with pytest.raises(RunFormatError, match=r"line 2 of .*eval\.jsonl"):
        load_run(run_dir)

    (run_dir / "eval.jsonl").write_text(json.dumps({"wall_time_s": 0.0}) + "\n")
    with pytest.raises(RunFormatError, match="actor_steps"):
        load_run(run_dir)

    (run_dir / "config.json").write_text(json.dumps({"agent": "dqn", "task": "cartpole"}))
    with pytest.raises(RunFormatError, match=r"config\.json lacks keys \['quantizer', 'seed'\]"):
        load_run(run_dir)

    (run_dir / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"r/config\.json"):
        load_run(run_dir)


# --- report and plots ----------------------------------------------------------------------------


def test_write_report_outputs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    dirs = []
    for seed, (tf, tq) in enumerate([(100.0, 40.0), (100.0, 40.0)]):
        dirs.append(
            write_run(
                runs,
                f"fp32_{seed}",
                quantizer="fp32",
                seed=seed,
                wall=WALL,
                returns=step_returns(WALL, tf),
                energy={"energy_kwh": 0.5, "emissions_kg": 0.2},
            )
        )
        dirs.append(
            write_run(
                runs,
                f"int8_{seed}",
                quantizer="int8",
                seed=seed,
                wall=WALL,
                steps=20 * WALL,
                returns=step_returns(WALL, tq),
                energy={"energy_kwh": 0.25, "emissions_kg": 0.1},
                truncated_tail=True,
            )
        )
    dirs.append(
        write_run(
            runs,
            "int2_0",
            quantizer="int2",
            seed=0,
            wall=WALL,
            returns=step_returns(WALL, 0.0, 10.0),
        )
    )
    # One run was resumed once: the report says where.
    (dirs[0] / "resumes.jsonl").write_text(json.dumps({"actor_steps": 300, "changed": {}}) + "\n")
    out = tmp_path / "report"
    md_path = write_report(dirs, out, window=1)

    assert md_path == out / "speedup.md"
    assert f"`{dirs[0]}` at actor steps 300" in md_path.read_text()
    md = md_path.read_text()
    int8_line = next(line for line in md.splitlines() if "| int8 |" in line)
    cells = [c.strip() for c in int8_line.strip("|").split("|")]
    assert cells[:4] == ["cartpole", "DQN", "int8", "0, 1"]
    assert cells[4] == "95.00"  # threshold
    assert cells[5] == "100.0"  # fp32 time-to-target
    assert cells[6] == "40.0"  # int8 time-to-target
    assert cells[7] == "2.50x"  # wall speedup
    assert cells[8] == "1.25x"  # actor-step speedup: 1000 fp32 steps vs 800 int8 steps
    assert cells[9] == "100.00 ± 0.00"
    assert cells[10] == "0.25" and cells[11] == "0.1" and cells[12] == "2.00"
    int2_line = next(line for line in md.splitlines() if "| int2 |" in line)
    assert "not reached" in int2_line

    data = json.loads((out / "speedup.json").read_text())
    by_precision = {r["precision"]: r for r in data["rows"]}
    assert set(by_precision) == {"fp32", "int8", "int2"}
    assert by_precision["int8"]["speedup_wall"] == pytest.approx(2.5)
    assert by_precision["int8"]["co2_ratio"] == pytest.approx(2.0)
    assert by_precision["fp32"]["speedup_wall"] == pytest.approx(1.0)
    assert by_precision["int2"]["speedup_wall"] is None
    assert by_precision["int2"]["status_wall"] == "quant not reached"
    assert by_precision["int2"]["quant_seed_times_wall"] == [None]
    assert by_precision["int2"]["co2_ratio"] is None

    for name in ("dqn_cartpole_wall_time.png", "dqn_cartpole_actor_steps.png"):
        assert (out / name).read_bytes()[:8] == PNG_MAGIC
    assert sorted(data["plots"]) == ["dqn_cartpole_actor_steps.png", "dqn_cartpole_wall_time.png"]


def test_report_without_baseline_keeps_rows(tmp_path: Path) -> None:
    int8 = make_run(tmp_path, "q", "int8", 0, t_reach=40.0)
    rows = speedup_table(group_runs([int8]))
    assert len(rows) == 1
    assert rows[0]["speedup_wall"] is None and rows[0]["status_wall"] == "no fp32 baseline"
    assert "no fp32 baseline" in markdown_table(rows)


def test_plot_breakdown_writes_png(tmp_path: Path) -> None:
    breakdowns = {
        "fp32": {"inference": 10.0, "env": 2.0, "pull": 1.0, "deserialize": 0.5, "load": 0.2},
        "int8": {"inference": 2.0, "env": 2.0, "pull": 0.3, "deserialize": 0.2, "load": 0.1},
    }
    path = plot_breakdown(breakdowns, tmp_path / "figs" / "breakdown.png")
    assert path.read_bytes()[:8] == PNG_MAGIC
    frac = plot_breakdown(breakdowns, tmp_path / "frac.png", normalize=True)
    assert frac.read_bytes()[:8] == PNG_MAGIC
    with pytest.raises(ValueError, match="non-negative"):
        plot_breakdown({"fp32": {"env": -1.0}}, tmp_path / "bad.png")


def test_a_mixed_precision_fleet_is_its_own_group(tmp_path: Path) -> None:
    fleet = write_run(tmp_path, "fleet", quantizer="int8", seed=0, wall=WALL,
                      returns=step_returns(WALL, 50.0))
    config = json.loads((fleet / "config.json").read_text())
    config["actor_quantizers"] = "fp32,int8"
    (fleet / "config.json").write_text(json.dumps(config))
    assert load_run(fleet).quantizer == "fleet:fp32+int8"
    # A fleet of one precision is just that precision.
    config["actor_quantizers"] = "int8,int8"
    (fleet / "config.json").write_text(json.dumps(config))
    assert load_run(fleet).quantizer == "int8"


def test_curves_plot_the_fp32_scored_policy_of_quantized_runs(tmp_path: Path,
                                                              monkeypatch) -> None:
    """The learning curves show both evaluations: the deployed package and, dotted, the learner's
    own fp32 policy of the same versions, so a reader can tell data from deployment."""
    from actorq.analysis.plots import plot_curves
    from actorq.analysis.speedup import smoothed_mean_fp32_curve

    fp32 = make_run(tmp_path, "fp32_s0", "fp32", 0, 50.0)
    run_dir = write_run(tmp_path, "int8_s0", quantizer="int8", seed=0, wall=WALL,
                        returns=step_returns(WALL, 80.0))
    rows = [json.loads(line) for line in (run_dir / "eval.jsonl").read_text().splitlines()]
    for row, fp32_score in zip(rows, step_returns(WALL, 40.0, high=90.0), strict=True):
        row["eval_return_fp32"] = fp32_score
    (run_dir / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    int8 = load_run(run_dir)
    assert int8.eval_return_fp32 is not None and fp32.eval_return_fp32 is None
    curve = smoothed_mean_fp32_curve([int8], axis="wall_time_s", window=1)
    assert curve is not None and curve.mean[-1] == 90.0 and curve.mean[0] == 0.0
    assert smoothed_mean_fp32_curve([int8, fp32]) is None  # only when every run has it

    labels: list[str] = []
    import matplotlib.axes

    original = matplotlib.axes.Axes.plot

    def recording_plot(self, *args, **kwargs):
        labels.append(kwargs.get("label", ""))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "plot", recording_plot)
    paths = plot_curves({("dqn", "cartpole"): {"fp32": [fp32], "int8": [int8]}}, tmp_path / "p")
    assert len(paths) == 2 and all(p.stat().st_size > 0 for p in paths)
    assert labels.count("int8 runs, fp32-scored policy") == 2  # one per axis, none for fp32
    assert not any(label.startswith("fp32 runs") for label in labels)
