"""experiments.lowp_study: run rows, failure handling, per-variant summary, report, state bytes.

Run directories are fabricated in the format the single-process launcher writes (config.json,
eval.jsonl, learner.jsonl, summary.json; a run that raised has no summary.json), so no training.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from actorq.agents.sac.config import FIX_NAMES
from actorq.analysis.runs import config_to_dict, copy_run_records, run_status
from configs import sac_actorq
from experiments import lowp_study
from launchpad_programs import study_runs


def _config_json(precision: str, fixes: str, seed: int, steps: int) -> dict[str, Any]:
    config = lowp_study.learner_config(
        sac_actorq.get_config("cartpole_balance_small"), precision, fixes, seed, steps)
    return config_to_dict(config)


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    # json.dumps writes NaN as the launcher's logs do.
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _fake_run(root: Path, name: str, precision: str, fixes: str, seed: int,
              returns: list[float], *, steps: int = 4000, fail_at: int | None = None,
              nonfinite_from: int | None = None, wall: float = 50.0) -> Path:
    """A run dir with an evaluation every 2000 actor steps (``returns``) and a learner row every
    1000 steps; ``fail_at``: the run raised there (failure.json, no summary.json);
    ``nonfinite_from``: learner rows report non-finite parameters from that actor step."""
    path = root / name
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(_config_json(precision, fixes, seed, steps)))
    evals = [{"actor_steps": 2000 * i, "learner_steps": max(0, 2000 * i - 1000),
              "wall_time_s": 10.0 * i, "eval_return": r, "eval_return_std": 1.0,
              "policy_version": 0} for i, r in enumerate(returns)]
    _write_jsonl(path / "eval.jsonl", evals)
    end = fail_at if fail_at is not None else steps
    learner = []
    for actor_steps in range(1000, end + 1, 1000):
        bad = nonfinite_from is not None and actor_steps >= nonfinite_from
        learner.append({
            "actor_steps": actor_steps, "learner_steps": actor_steps - 900,
            "wall_time_s": wall * actor_steps / steps,
            "critic_loss": math.nan if bad else 1.0, "nonfinite": 1.0 if bad else 0.0,
            "skipped_steps": float(actor_steps // 1000), "loss_scale": 8192.0,
            "actor_loss_scale": 16384.0, "alpha_loss_scale": 1.0 if bad else 2048.0,
        })
    _write_jsonl(path / "learner.jsonl", learner)
    if fail_at is None:
        (path / "summary.json").write_text(json.dumps({
            "actor_steps": steps, "learner_steps": steps - 900, "wall_time_s": wall,
            "final_eval_return": returns[-1], "interrupted": False, "energy_kwh": 0.001,
            "emissions_kg": 0.0004, "bytes_pulled": 12345, "num_pulls": 40}))
    else:
        (path / lowp_study.FAILURE_FILE).write_text(json.dumps({
            "error_type": "ValueError", "error": "Action must not be NaN, got [nan]",
            "traceback": "..."}))
    return path


def test_parse_variants_and_ablation_settings():
    variants = lowp_study.parse_variants(lowp_study.DEFAULT_VARIANTS)
    assert [(v.name, v.precision, v.lowp_fixes) for v in variants] == [
        ("fp32", "fp32", None), ("fp16_naive", "fp16", "none"), ("fp16_fixed", "fp16", "all"),
        ("bf16_fixed", "bf16", "all")]
    [amp] = lowp_study.parse_variants("fp16_amp")
    assert (amp.precision, amp.lowp_fixes, amp.master_weights) == ("fp16", "loss_scaling", True)
    amp_config = lowp_study.learner_config(sac_actorq.get_config("cartpole_balance_small"),
                                           amp.precision, amp.lowp_fixes, master_weights=True)
    assert amp_config.learner.master_weights is True
    assert amp_config.learner.loss_scale_init == 2.0**15
    assert amp_config.learner.loss_scale_increase_every == 2000
    with pytest.raises(ValueError, match="unknown variant"):
        lowp_study.parse_variants("fp16_half")
    with pytest.raises(ValueError, match="duplicates"):
        lowp_study.parse_variants("fp32,fp32")
    settings = dict(lowp_study.ablation_settings())
    assert len(settings) == 8
    assert settings["minus_hadam"] == ",".join(FIX_NAMES[1:])
    assert settings["minus_kahan_gradients"] == ",".join(FIX_NAMES[:-1])
    assert settings["fp16_all"] == "all" and settings["fp16_none"] == "none"
    assert lowp_study._without_note(["--seeds=0", "--note=a b", "--note", "c", "--out_dir=x"]) \
        == ["--seeds=0", "--out_dir=x"]
    config = lowp_study.learner_config(sac_actorq.get_config("cartpole_balance_small"),
                                       "fp16", "none", seed=3, max_actor_steps=500)
    assert (config.learner.precision, config.learner.lowp_fixes, config.seed,
            config.max_actor_steps, config.quantizer) == ("fp16", "none", 3, 500, "int8")
    assert config.learner.master_weights is False


def test_run_rows_variants_and_report(tmp_path):
    main = tmp_path / "main"
    dirs = [
        (_fake_run(main, "fp32_seed0", "fp32", "all", 0, [300, 700, 800]), "fp32"),
        (_fake_run(main, "fp32_seed1", "fp32", "all", 1, [300, 760, 900]), "fp32"),
        (_fake_run(main, "fp16_naive_seed0", "fp16", "none", 0, [310], fail_at=1000,
                   nonfinite_from=1000, wall=60.0), "fp16_naive"),
        (_fake_run(main, "fp16_fixed_seed0", "fp16", "all", 0, [300, 780, 830]), "fp16_fixed"),
        (_fake_run(main, "fp16_fixed_seed1", "fp16", "all", 1, [300, 700, 870]), "fp16_fixed"),
        (_fake_run(main, "bf16_fixed_seed0", "bf16", "all", 0, [300, 500, 200],
                   nonfinite_from=3000), "bf16_fixed"),
    ]
    rows = [lowp_study.summarize_run(path, name) for path, name in dirs]

    ok = rows[0]
    assert ok["status"] == "ok" and ok["lowp_fixes"] == "n/a" and ok["seed"] == 0
    assert ok["final_return"] == 800 and ok["best_return"] == 800
    assert ok["best_actor_steps"] == 4000 and ok["learner_steps"] == 3100
    assert ok["skipped_steps"] == 4 and ok["loss_scale"] == 8192.0
    assert ok["nonfinite"] is False and ok["first_nonfinite_learner_steps"] is None
    assert ok["wall_time_s"] == 50.0 and ok["energy_kwh"] == 0.001
    assert ok["last5_return"] == pytest.approx(600.0)  # 3 evaluations: the mean of all of them

    failed = rows[2]
    assert failed["status"] == "failed" and failed["error"].startswith("ValueError: Action")
    assert failed["final_return"] is None and failed["last_eval_return"] == 310
    assert failed["best_return"] == 310 and failed["nonfinite"] is True
    assert failed["first_nonfinite_actor_steps"] == 1000
    assert failed["first_nonfinite_learner_steps"] == 100
    assert failed["wall_time_s"] == 15.0 and failed["learner_steps"] == 100
    assert failed["energy_kwh"] is None and failed["last5_return"] is None

    diverged = rows[5]
    assert diverged["status"] == "diverged" and diverged["final_return"] == 200
    assert diverged["first_nonfinite_actor_steps"] == 3000
    assert diverged["best_return"] == 500 and diverged["alpha_loss_scale"] == 1.0

    variants = lowp_study.summarize_variants(rows)
    fp32, naive, fixed, bf16 = (variants[k] for k in
                                ("fp32", "fp16_naive", "fp16_fixed", "bf16_fixed"))
    assert fp32["final_mean"] == pytest.approx(850.0)
    assert fp32["final_std"] == pytest.approx(math.sqrt(2 * 50.0 ** 2))  # ddof=1
    assert fp32["rel_to_fp32"] == 0.0 and fp32["within_5pct_of_fp32"] is True
    assert fixed["final_mean"] == pytest.approx(850.0) and fixed["best_mean"] == 850.0
    assert fixed["within_5pct_of_fp32"] is True
    assert naive["failed"] == 1 and naive["final_mean"] is None and naive["final_n"] == 0
    assert naive["within_5pct_of_fp32"] is False and naive["best_mean"] == 310
    assert bf16["diverged"] == 1 and bf16["within_5pct_of_fp32"] is False
    assert bf16["rel_to_fp32"] == pytest.approx(200 / 850 - 1)
    # Last 5 beside the final evaluation: fp32 (600 + 653.3) / 2, fixed (636.7 + 623.3) / 2.
    assert fp32["last5_mean"] == pytest.approx(626.667, abs=1e-3)
    assert fixed["last5_rel_to_fp32"] == pytest.approx(630.0 / 626.667 - 1, abs=1e-5)
    assert naive["last5_mean"] is None and naive["last5_rel_to_fp32"] is None
    # Within 5% means not more than 5% below: above fp32 counts, 6% below does not.
    for finals, expected in (([950, 920], True), ([800, 797], False), ([810, 810], True)):
        extra = [{**rows[0], "name": "probe", "seed": i, "final_return": f, "best_return": f}
                 for i, f in enumerate(finals)]
        probe = lowp_study.summarize_variants([*rows[:2], *extra])["probe"]
        assert probe["within_5pct_of_fp32"] is expected, (finals, probe["rel_to_fp32"])

    ablation = [lowp_study.summarize_run(
        _fake_run(tmp_path / "ablation", name, "fp16", fixes, 0, [300, 600 + i], steps=2000),
        name) for i, (name, fixes) in enumerate(lowp_study.ablation_settings())]
    report = {
        "command": "python -m experiments.lowp_study --out_dir=x", "machine": "test CPU",
        "note": "budget cut", "agent": "sac", "task": "cartpole_balance", "quantizer": "int8",
        "eval_episodes": 5,
        "main": {"max_actor_steps": 4000, "seeds": [0, 1], "runs": rows, "variants": variants},
        "ablation": {"seed": 0, "max_actor_steps": 2000, "runs": ablation},
        "bytes": [{"precision": "fp32", "lowp_fixes": "n/a", "params": 400, "optimizer": 300,
                   "kahan_momentum": 0, "other": 16, "total": 716, "float_bytes": 700,
                   "ratio_to_fp32": 1.0}],
        "actorq": {"seed": 0, "max_actor_steps": 4000, "runs": [rows[3], rows[0]],
                   "state_bytes": [500, 716]},
    }
    md_path = lowp_study.write_report(report, tmp_path)
    text = md_path.read_text()
    assert "| fp16_naive | 0 | failed (ValueError: Action must not be NaN" in text
    assert "- (last eval 310.0 at 0)" in text
    assert "yes (learner step 100, actor step 1,000)" in text
    assert "| fp16_fixed | fp16 | all | 2 | 0 | 0 | 850.0 ± 28.3 | 630.0 ± 9.4 |" in text
    assert "| +0.0% | +0.0% | yes |" in text
    assert "| fp32 | 0 | ok | 800.0 | 600.0 | 800.0 (4,000) |" in text
    assert "| fp16_naive | fp16 | none | 1 | 1 | 0 | - |" in text
    assert "| minus_hadam |" in text and "| fp16_none | none | ok | 607.0 | +0.2% |" in text
    assert "| fp32 | n/a | 400 | 300 | 0 | 16 | 716 | 1.000 |" in text
    assert "## int8 actors + fp16 learner vs fp32/fp32" in text
    assert "| int8 | fp16 (all fixes) | main/fp16_fixed_seed0 | ok | 830.0 |" in text
    assert "Note: budget cut" in text
    saved = json.loads((tmp_path / "lowp.json").read_text())  # strict JSON: NaN became null
    assert saved["main"]["variants"]["fp16_naive"]["final_mean"] is None
    assert saved["main"]["runs"][2]["status"] == "failed"

    # --noablation: no ablation section, the rest as before.
    without = lowp_study.write_report({**report, "ablation": None}, tmp_path / "no_ablation")
    text = without.read_text()
    assert "## Ablation" not in text and "minus_hadam" not in text
    assert "| fp16_fixed | fp16 | all | 2 | 0 | 0 | 850.0 ± 28.3 |" in text


def test_a_raising_run_is_recorded_and_not_rerun(tmp_path, monkeypatch):
    calls = []

    def diverging_run(config, run_dir, reuse=True):
        calls.append(run_dir)
        _fake_run(Path(run_dir).parent, Path(run_dir).name, "fp16", "none", 0, [310],
                  steps=int(config.max_actor_steps), fail_at=1000, nonfinite_from=1000)
        (Path(run_dir) / lowp_study.FAILURE_FILE).unlink()  # the study writes its own
        raise ValueError("Action must not be NaN, got [nan]")

    monkeypatch.setattr(study_runs, "run_or_load", diverging_run)
    config = lowp_study.learner_config(sac_actorq.get_config("cartpole_balance_small"),
                                       "fp16", "none", 0, 4000)
    run_dir = tmp_path / "fp16_naive_seed0"
    assert lowp_study.run_recording_failures(config, run_dir) == run_dir
    failure = json.loads((run_dir / lowp_study.FAILURE_FILE).read_text())
    assert failure["error_type"] == "ValueError" and "NaN" in failure["error"]
    assert lowp_study.summarize_run(run_dir, "fp16_naive")["status"] == "failed"
    # Reused on the next invocation: not run again.
    assert lowp_study.run_recording_failures(config, run_dir) == run_dir
    assert len(calls) == 1
    # A different config in that directory is an error, not a failed run.
    other = lowp_study.learner_config(config, "fp16", "all")
    with pytest.raises(ValueError, match="different config"):
        lowp_study.run_recording_failures(other, run_dir)

    def interrupted(config, run_dir, reuse=True):
        raise study_runs.RunInterrupted("stop")

    monkeypatch.setattr(study_runs, "run_or_load", interrupted)
    with pytest.raises(study_runs.RunInterrupted):
        lowp_study.run_recording_failures(config, tmp_path / "other")


def test_report_only_starts_no_run_and_reports_unfinished_runs_as_pending(tmp_path, monkeypatch):
    """--report_only: finished and failed runs as usual; a stopped run and one never started
    are pending (with their progress), nothing runs, and nothing is written into the runs."""
    def must_not_run(config, run_dir, reuse=True):
        raise AssertionError(f"ran {run_dir}")

    monkeypatch.setattr(study_runs, "run_or_load", must_not_run)
    monkeypatch.setattr(lowp_study, "bytes_table", lambda config: [])  # tested on its own
    config = sac_actorq.get_config("cartpole_balance_small")
    config.max_actor_steps = 4000
    variants = lowp_study.parse_variants("fp32,fp16_naive,fp16_fixed")
    main = tmp_path / "main"
    finished = {("fp32", 0): [300, 700, 800], ("fp32", 1): [300, 760, 900],
                ("fp16_fixed", 0): [300, 780, 830]}
    for variant in variants:
        for seed in (0, 1):
            name = f"{variant.name}_seed{seed}"
            run_config = lowp_study.learner_config(config, variant.precision,
                                                   variant.lowp_fixes, seed)
            if (variant.name, seed) in finished:
                path = _fake_run(main, name, variant.precision, "all", seed,
                                 finished[(variant.name, seed)])
            elif name == "fp16_naive_seed0":
                path = _fake_run(main, name, "fp16", "none", 0, [310], fail_at=1000,
                                 nonfinite_from=1000)
            elif name == "fp16_fixed_seed1":  # stopped at 2000 of 4000 steps
                path = _fake_run(main, name, "fp16", "all", 1, [300, 600], fail_at=2000)
                (path / lowp_study.FAILURE_FILE).unlink()
            else:
                continue  # fp16_naive_seed1: never started
            (path / "config.json").write_text(json.dumps(config_to_dict(run_config)))
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}

    report = lowp_study.build_report(config, variants, [0, 1], 0, 0, tmp_path, True, False,
                                     "cmd", report_only=True)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert not (main / "fp16_naive_seed1").exists()
    rows = report["main"]["runs"]
    assert [r["status"] for r in rows] == ["ok", "ok", "failed", "pending", "ok", "pending"]
    stopped, not_started = rows[5], rows[3]
    assert stopped["final_return"] is None and stopped["last_eval_return"] == 600
    assert stopped["actor_steps"] == 2000 and stopped["best_return"] == 600
    assert not_started["actor_steps"] == 0 and not_started["best_return"] is None
    assert not_started["precision"] == "fp16" and not_started["seed"] == 1
    summary = report["main"]["variants"]
    assert summary["fp16_fixed"]["pending"] == 1 and summary["fp16_fixed"]["final_n"] == 1
    assert summary["fp16_fixed"]["within_5pct_of_fp32"] is None  # undecided while pending
    # Best return and wall time come from the seeds that ended, as the final return does.
    assert summary["fp16_fixed"]["best_mean"] == 830 and summary["fp16_fixed"]["best_std"] == 0
    assert summary["fp16_fixed"]["wall_time_s_mean"] == 50.0
    assert summary["fp16_naive"]["within_5pct_of_fp32"] is False  # a failed seed decides
    assert summary["fp32"]["within_5pct_of_fp32"] is True
    text = lowp_study.markdown(report)
    assert ("| fp16_fixed | 1 | pending (at 2,000 of 4,000 steps) | "
            "- (last eval 600.0 at 2,000) |") in text
    assert "| fp16_naive | 1 | pending (not started) | - | - |" in text
    assert ("| fp16_fixed | fp16 | all | 2 (1 pending) | 0 | 0 | 830.0 ± 0.0 (n=1) | "
            "636.7 ± 0.0 | 830.0 ± 0.0 | -2.4% | +1.6% | - | 50 |") in text
    # Without --report_only an unfinished run is not a row the report can read.
    with pytest.raises(ValueError, match="neither finished"):
        lowp_study.summarize_run(main / "fp16_fixed_seed1", "fp16_fixed")
    # A run with another config in the way is still an error.
    (main / "fp32_seed0" / "config.json").write_text(json.dumps(config_to_dict(
        lowp_study.learner_config(config, "fp16", "all", 0))))
    with pytest.raises(ValueError, match="different config"):
        lowp_study.build_report(config, variants, [0, 1], 0, 0, tmp_path, True, False, "cmd",
                                report_only=True)


def test_state_bytes_halve_in_fp16_and_the_fixes_add_kahan_buffers():
    config = sac_actorq.get_config("cartpole_balance_small")
    rows = {(r["precision"], r["lowp_fixes"]): r for r in lowp_study.bytes_table(config)}
    fp32, fp16_none, fp16_all = rows["fp32", "n/a"], rows["fp16", "none"], rows["fp16", "all"]
    # cartpole: 5 observations, 1 action; policy 5-64-64-2, critics 2 x (6-128-128-1).
    policy = (5 * 64 + 64) + (64 * 64 + 64) + (64 * 2 + 2)
    critics = 2 * ((6 * 128 + 128) + (128 * 128 + 128) + (128 + 1))
    # params + targets + log_alpha, 4 bytes each in fp32.
    assert fp32["params"] == 4 * (policy + 2 * critics + 1)
    assert fp32["kahan_momentum"] == 0
    # Non-float leaves (PRNG key, counters) keep their size; every float leaf halves.
    other = fp32["total"] - fp32["float_bytes"]
    assert fp16_none["total"] - fp16_none["float_bytes"] == other
    assert fp16_none["float_bytes"] * 2 == fp32["float_bytes"]
    assert fp16_none["ratio_to_fp32"] == pytest.approx(0.5, abs=0.001)
    assert rows["bf16", "none"]["total"] == fp16_none["total"]
    # The fixes: Kahan-momentum buffers for the target critics, Kahan-gradient buffers for the
    # policy and critics (plus scalars for the loss scales).
    assert fp16_all["kahan_momentum"] == 2 * critics
    assert fp16_all["optimizer"] - fp16_none["optimizer"] == 2 * (policy + critics) + 2
    assert fp16_all["ratio_to_fp32"] == pytest.approx(
        (fp16_none["total"] + 2 * (policy + 2 * critics) + 2) / fp32["total"])


def test_kept_records_rebuild_the_report_without_running(tmp_path, monkeypatch):
    """--keep_records: each run's records are copied as it ends (a failed run's failure.json
    included); a later --out_dir=<copies> reads them, runs nothing and gets every row back."""
    def fake_run(config, run_dir, reuse=True):
        path = Path(run_dir)
        if path.is_dir():  # reused
            return path
        precision, fixes = str(config.learner.precision), str(config.learner.lowp_fixes)
        if fixes == "none":
            _fake_run(path.parent, path.name, precision, fixes, int(config.seed), [310],
                      steps=int(config.max_actor_steps), fail_at=1000, nonfinite_from=1000)
            (path / lowp_study.FAILURE_FILE).unlink()  # the study writes its own
            raise ValueError("Action must not be NaN, got [nan]")
        _fake_run(path.parent, path.name, precision, fixes, int(config.seed),
                  [300, 700 + int(config.seed)], steps=int(config.max_actor_steps))
        (path / "config.json").write_text(json.dumps(config_to_dict(config)))
        (path / "checkpoints").mkdir()
        return path

    monkeypatch.setattr(study_runs, "run_or_load", fake_run)
    config = sac_actorq.get_config("cartpole_balance_small")
    config.max_actor_steps = 2000
    variants = lowp_study.parse_variants("fp32,fp16_naive,fp16_fixed")
    out, kept = tmp_path / "runs", tmp_path / "records"

    def cut_short(config, run_dir, reuse=True):
        if Path(run_dir).name == "fp16_fixed_seed0":
            raise study_runs.RunInterrupted("stop")
        return fake_run(config, run_dir, reuse)

    # A study cut short has kept the runs that ended before it.
    monkeypatch.setattr(study_runs, "run_or_load", cut_short)
    with pytest.raises(study_runs.RunInterrupted):
        lowp_study.build_report(config, variants, [0, 1], 0, 0, out, True, True, "cmd",
                                keep=kept)
    assert sorted(p.name for p in (kept / "main").iterdir()) == [
        "fp16_naive_seed0", "fp16_naive_seed1", "fp32_seed0", "fp32_seed1"]

    monkeypatch.setattr(study_runs, "run_or_load", fake_run)
    copied = []

    def recording_copies(*args, **kwargs):
        copied.append(Path(args[0][0]).name)
        return copy_run_records(*args, **kwargs)

    monkeypatch.setattr(lowp_study.runs, "copy_run_records", recording_copies)
    report = lowp_study.build_report(config, variants, [0, 1], 0, 0, out, True, True, "cmd",
                                     keep=kept)
    # One copy per run as it ends, in run order; the actorq comparison reuses
    # main/fp16_fixed_seed0 (int8 actors), whose copy in main/ is made again (the same files).
    assert copied == ["fp32_seed0", "fp32_seed1", "fp16_naive_seed0", "fp16_naive_seed1",
                      "fp16_fixed_seed0", "fp16_fixed_seed1", "fp16_fixed_seed0",
                      "fp32_actors_fp32_learner_seed0"]
    copies = sorted(p.parent for p in kept.glob("*/*/config.json"))
    assert [str(p.relative_to(kept)) for p in copies] == [
        "actorq/fp32_actors_fp32_learner_seed0", "main/fp16_fixed_seed0", "main/fp16_fixed_seed1",
        "main/fp16_naive_seed0", "main/fp16_naive_seed1", "main/fp32_seed0", "main/fp32_seed1"]
    assert sorted(p.name for p in (kept / "main" / "fp16_naive_seed0").iterdir()) == [
        "config.json", "eval.jsonl", lowp_study.FAILURE_FILE, "learner.jsonl"]
    assert not (kept / "main" / "fp32_seed0" / "checkpoints").exists()

    def must_not_run(config, run_dir, reuse=True):
        if not Path(run_dir).is_dir():
            raise AssertionError(f"ran {run_dir}")
        return Path(run_dir)

    monkeypatch.setattr(study_runs, "run_or_load", must_not_run)
    rebuilt = lowp_study.build_report(config, variants, [0, 1], 0, 0, kept, True, True, "cmd")

    def without_dirs(rows):
        return [{k: v for k, v in r.items() if k != "run_dir"} for r in rows]

    assert without_dirs(rebuilt["main"]["runs"]) == without_dirs(report["main"]["runs"])
    assert [r["status"] for r in rebuilt["main"]["runs"]] == [
        "ok", "ok", "failed", "failed", "ok", "ok"]
    assert without_dirs(rebuilt["actorq"]["runs"]) == without_dirs(report["actorq"]["runs"])
    # Rebuilding with the copies as both out_dir and keep leaves every file as it was.
    before = {p: p.read_bytes() for p in kept.rglob("*") if p.is_file()}
    lowp_study.build_report(config, variants, [0, 1], 0, 0, kept, True, True, "cmd", keep=kept)
    assert {p: p.read_bytes() for p in kept.rglob("*") if p.is_file()} == before


def test_a_stopped_runs_records_so_far_are_kept_in_its_folder(tmp_path, monkeypatch):
    """A study stopped mid-run (SIGTERM) keeps that run's evaluations so far in
    ``keep/main/<run>``, reported as pending with its progress."""
    def stopped_run(config, run_dir, reuse=True):
        _fake_run(Path(run_dir).parent, Path(run_dir).name, "fp32", "none", 0, [300, 700],
                  steps=int(config.max_actor_steps), fail_at=2000)
        (Path(run_dir) / lowp_study.FAILURE_FILE).unlink()  # stopped, not failed
        raise study_runs.RunInterrupted("stop")

    monkeypatch.setattr(study_runs, "run_or_load", stopped_run)
    config = sac_actorq.get_config("cartpole_balance_small")
    config.max_actor_steps = 4000
    kept = tmp_path / "records"
    with pytest.raises(study_runs.RunInterrupted):
        lowp_study.run_recording_failures(config, tmp_path / "runs" / "main" / "fp32_seed0",
                                          keep=kept)
    copy = kept / "main" / "fp32_seed0"
    assert (copy / "eval.jsonl").read_text() == (
        tmp_path / "runs" / "main" / "fp32_seed0" / "eval.jsonl").read_text()
    assert run_status(copy) == "partial"
    assert lowp_study.summarize_run(copy, "fp32", config)["status"] == "pending"
