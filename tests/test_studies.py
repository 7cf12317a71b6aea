"""The paper's studies from the code: PTQ, QAT sweep, speedup report, pull-period ablation.

One tiny trained DQN run is shared by the whole module; the other studies use tiny budgets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import ml_collections
import numpy as np
import pytest

from actorq.analysis import report as analysis_report
from actorq.analysis import runs as analysis_runs
from actorq.analysis.ptq import (
    action_agreement,
    action_distances,
    action_gap_errors,
    agreement_by_gap_quartile,
    episode_seeds,
    kl_divergence,
    parse_quantizers,
    relative_error,
)
from actorq.analysis.trained_policy import load_trained_policy
from configs import dqn_actorq
from experiments import pull_period_ablation, qat_sweep, table2, weight_distributions
from experiments.ptq_study import ptq_study
from launchpad_programs import study_runs

REPO = Path(__file__).resolve().parents[1]


def tiny_config(steps: int) -> ml_collections.ConfigDict:
    config = dqn_actorq.get_config("cartpole_small")
    config.max_actor_steps = steps
    config.track_energy = False
    config.eval_episodes = 2
    config.eval_every_steps = 500
    config.checkpoint_every_steps = 100_000  # only the final checkpoint
    config.checkpoint_replay = False
    return config


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from launchpad_programs.launch import run_experiment

    run_dir = tmp_path_factory.mktemp("trained") / "dqn_fp32"
    config = tiny_config(4000)
    config.quantizer = "fp32"
    config.eval_every_steps = 2000
    config.run_dir = str(run_dir)
    run_experiment(config)
    return run_dir


# PTQ metrics.


def test_kl_of_a_policy_with_itself_is_exactly_zero() -> None:
    rng = np.random.default_rng(0)
    for scale in (1e-3, 1.0, 1e3):
        q = rng.normal(size=(257, 6)).astype(np.float32) * scale
        for temperature in (0.1, 1.0, 10.0):
            kl = kl_divergence(q, q.copy(), temperature)
            assert kl.shape == (257,)
            assert np.all(kl == 0.0)
    q = rng.normal(size=(50, 3))
    other = q + rng.normal(scale=0.5, size=q.shape)
    kl = kl_divergence(q, other)
    assert np.all(kl >= 0.0) and kl.mean() > 0.0
    # Higher temperature flattens both distributions: less divergence.
    assert kl_divergence(q, other, 10.0).mean() < kl.mean()
    with pytest.raises(ValueError, match="temperature"):
        kl_divergence(q, q, 0.0)
    with pytest.raises(ValueError, match="shape"):
        kl_divergence(q, q[:, :2])


def test_action_metrics_and_relative_error() -> None:
    assert action_agreement(np.array([0, 1, 1, 2]), np.array([0, 1, 2, 2])) == 0.75
    l2, max_abs = action_distances(np.zeros((2, 2)), np.array([[3.0, 4.0], [0.0, -1.0]]))
    assert l2 == pytest.approx(3.0) and max_abs == pytest.approx(4.0)
    assert relative_error(200.0, 190.0) == pytest.approx(0.05)
    assert relative_error(-100.0, -110.0) == pytest.approx(0.1)  # worse return -> positive
    assert relative_error(0.0, 5.0) is None
    seeds = episode_seeds(3, 4)
    assert seeds == episode_seeds(3, 4) and len(set(seeds)) == 4


def test_action_gap_errors_measure_the_best_vs_second_difference() -> None:
    reference = np.array([[1.0, 3.0, 2.0], [5.0, 0.0, 4.5]])
    # Row 0: best 1, second 2 (gap 1.0); quantized moves them to 2.5 / 2.2 -> gap 0.3.
    # Row 1: best 0, second 2 (gap 0.5); quantized 4.0 / 4.6 -> gap -0.6 (the action flips).
    quantized = np.array([[9.0, 2.5, 2.2], [4.0, 7.0, 4.6]])
    gap, error = action_gap_errors(reference, quantized)
    np.testing.assert_allclose(gap, [1.0, 0.5])
    np.testing.assert_allclose(error, [0.7, 1.1])
    np.testing.assert_array_equal(error > gap, [False, True])  # row 1's greedy action flips
    with pytest.raises(ValueError):
        action_gap_errors(np.zeros((3, 1)), np.zeros((3, 1)))


def test_agreement_by_gap_quartile_splits_the_observations_by_fp32_gap() -> None:
    gaps = np.array([0.8, 0.01, 0.4, 0.02, 0.9, 0.3, 0.05, 0.6])
    reference = np.zeros(8, np.int64)
    # Flips at the two narrowest gaps (0.01, 0.02) and at 0.3: quarters of 2 by gap.
    actions = np.array([0, 1, 0, 1, 0, 1, 0, 0])
    agreements, edges = agreement_by_gap_quartile(gaps, reference, actions)
    assert agreements == (0.0, 0.5, 1.0, 1.0)
    np.testing.assert_allclose(edges, np.percentile(gaps, (25, 50, 75)))
    with pytest.raises(ValueError, match="gaps"):
        agreement_by_gap_quartile(gaps[:3], reference[:3], actions[:3])


def test_quantizer_lists_are_validated() -> None:
    assert parse_quantizers("int8,fp16") == ["fp32", "int8", "fp16"]
    assert parse_quantizers(["int8", "fp32"], include_baseline=False) == ["int8", "fp32"]
    with pytest.raises(ValueError, match="empty"):
        parse_quantizers(" , ")
    with pytest.raises(ValueError, match="duplicate"):
        parse_quantizers("int8,int8")
    with pytest.raises(ValueError, match="unknown quantizer 'int8x'"):
        parse_quantizers("fp32,int8x")
    with pytest.raises(ValueError, match="int9"):
        parse_quantizers("int9")


# PTQ study end to end.


def test_ptq_study_end_to_end(trained_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "ptq"
    md = ptq_study(trained_run, "fp32,fp16,int8,int4", episodes=5, out_dir=out)
    assert md == out / "ptq.md"
    report = json.loads((out / "ptq.json").read_text())
    rows = {r["quantizer"]: r for r in report["results"]}
    assert list(rows) == ["fp32", "fp16", "int8", "int4"]
    assert report["discrete"] and report["temperature"] == 1.0
    assert report["num_observations"] > 0 and len(report["episode_seeds"]) == 5

    fp32, int8 = rows["fp32"], rows["int8"]
    assert fp32["relative_error"] == 0.0
    assert fp32["kl_mean"] == 0.0 and fp32["kl_max"] == 0.0 and fp32["agreement"] == 1.0
    assert fp32["gap_error_median"] == 0.0 and report["action_gap_median"] > 0
    assert report["q_abs_median"] > report["action_gap_median"]  # Q-values dwarf their gaps
    assert 0.0 < int8["gap_error_median"] < rows["int4"]["gap_error_median"]
    assert len(fp32["returns"]) == 5
    # Training is not bitwise reproducible, so this policy varies between runs. A 4000-step
    # policy sits near Q-value ties on many states, so int8 flips some greedy actions (77-99%
    # agreement over 7 trained policies) and its return can move either way: the return of one
    # such policy says nothing about int8. What must hold is the study's arithmetic and the
    # ordering of the precisions on the same observations.
    expected = (fp32["mean_return"] - int8["mean_return"]) / abs(fp32["mean_return"])
    assert int8["relative_error"] == pytest.approx(expected, rel=1e-6, abs=1e-9)
    assert int8["mean_return"] == pytest.approx(sum(int8["returns"]) / len(int8["returns"]))
    assert int8["agreement"] > 0.6 and 0.0 < int8["kl_mean"] < 0.01
    assert int8["kl_mean"] < rows["int4"]["kl_mean"]
    assert rows["fp16"]["agreement"] > 0.9
    # Greedy flips gather where the two actions are nearly equal: on the half of the states with
    # the wider fp32 gaps the precisions agree at least as often.
    assert fp32["agreement_wide_gaps"] == 1.0
    for spec in ("int8", "int4"):
        assert rows[spec]["agreement_wide_gaps"] >= rows[spec]["agreement"]
    assert int8["package_bytes"] < rows["fp16"]["package_bytes"] < fp32["package_bytes"]
    counts = int8["action_summary"]["action_counts"]
    assert len(counts) == 2 and sum(counts) == report["num_observations"]

    text = md.read_text()
    assert "| fp32 |" in text and "| int4 |" in text and "T=1" in text
    assert "median action gap" in text
    png = out / report["plot"]
    assert png.name == "actions_fp32_vs_int8.png" and png.stat().st_size > 1000


def test_ptq_study_continuous_policy(tmp_path: Path) -> None:
    # The D4PG branch (action distances instead of KL) on an untrained policy: no training needed.
    import jax

    from actorq.analysis.ptq import run_ptq_study, write_ptq_report
    from actorq.analysis.trained_policy import TrainedPolicy
    from configs import d4pg_actorq
    from launchpad_programs.nodes import make_builder_for

    config = d4pg_actorq.get_config("cartpole_balance_small")
    builder = make_builder_for(config)
    params = jax.tree_util.tree_map(np.asarray, builder.make_learner(iter(()), 0).policy_params())
    policy = TrainedPolicy(tmp_path, config, builder, params, builder.policy_network, 0, 0)
    study = run_ptq_study(policy, "int8", episodes=1, max_observations=300)
    assert not study.discrete and study.num_observations == 300
    fp32, int8 = study.result("fp32"), study.result("int8")
    assert fp32.l2_mean == 0.0 and fp32.max_abs == 0.0 and fp32.kl_mean is None
    assert 0.0 < int8.l2_mean < 0.05 and int8.max_abs < 0.1 and int8.agreement is None
    assert abs(int8.relative_error) < 0.05
    paths = write_ptq_report(study, tmp_path / "ptq")
    assert "mean L2 action distance" in paths["md"].read_text()
    assert paths["png"].stat().st_size > 1000


def test_ptq_report_of_a_policy_with_more_outputs_than_actions(tmp_path: Path) -> None:
    # SAC's network outputs a mean and a log-std per action dimension; the plot has one panel per
    # action (it used to index actions by the network's width and fail after the measurements).
    import jax

    from actorq.analysis.ptq import run_ptq_study, write_ptq_report
    from actorq.analysis.trained_policy import TrainedPolicy
    from configs import sac_actorq
    from launchpad_programs.nodes import make_builder_for

    config = sac_actorq.get_config("cartpole_balance_small")
    builder = make_builder_for(config)
    params = jax.tree_util.tree_map(np.asarray, builder.make_learner(iter(()), 0).policy_params())
    policy = TrainedPolicy(tmp_path, config, builder, params, builder.policy_network, 0, 0)
    study = run_ptq_study(policy, "int8", episodes=1, max_observations=200)
    assert study.num_outputs == 2 and study.actions["int8"].shape == (200, 1)
    paths = write_ptq_report(study, tmp_path / "ptq")
    assert json.loads(paths["json"].read_text())["results"][1]["quantizer"] == "int8"
    assert paths["png"].stat().st_size > 1000


def test_trained_policy_loading_errors(trained_run: Path, tmp_path: Path) -> None:
    policy = load_trained_policy(trained_run)
    assert policy.agent == "dqn" and policy.discrete and policy.checkpoint_step == 4000
    assert policy.learner_steps > 0 and policy.network.output_size == 2

    with pytest.raises(FileNotFoundError, match="run directory not found"):
        load_trained_policy(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_trained_policy(tmp_path)
    no_ckpt = tmp_path / "no_ckpt"
    no_ckpt.mkdir()
    (no_ckpt / "config.json").write_text((trained_run / "config.json").read_text())
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        load_trained_policy(no_ckpt)
    assert not (no_ckpt / "checkpoints").exists()  # loading never writes into a run dir
    (no_ckpt / "checkpoints").mkdir()
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        load_trained_policy(no_ckpt)
    # A bad list fails before any loading.
    with pytest.raises(ValueError, match="int99"):
        ptq_study(tmp_path / "nope", "fp32,int99")


def test_run_or_load_refuses_mismatched_or_unreusable_runs(trained_run: Path) -> None:
    config = ml_collections.ConfigDict(json.loads((trained_run / "config.json").read_text()))
    assert analysis_runs.run_status(trained_run) == "finished"
    assert study_runs.run_or_load(config, trained_run) == trained_run  # reused, not rerun
    with pytest.raises(FileExistsError, match="--reuse"):
        study_runs.run_or_load(config, trained_run, reuse=False)
    config.max_actor_steps = 5000
    with pytest.raises(ValueError, match="max_actor_steps"):
        study_runs.run_or_load(config, trained_run)


def test_a_run_saved_before_a_field_was_added_matches_only_its_off_value(tmp_path: Path) -> None:
    config = dqn_actorq.get_config("cartpole_small")
    saved = config.to_dict()
    del saved["learner"]["target_update_tau"]  # a run from before Polyak targets existed
    (tmp_path / "config.json").write_text(json.dumps(saved))
    assert analysis_runs.config_differences(config, tmp_path) == []
    config.learner.target_update_tau = 0.005
    assert analysis_runs.config_differences(config, tmp_path) == ["learner.target_update_tau"]
    config.learner.target_update_tau = 0.0
    del saved["qat_actors"]  # a run from before the QAT actors' switch
    (tmp_path / "config.json").write_text(json.dumps(saved))
    assert analysis_runs.config_differences(config, tmp_path) == []
    config.qat_actors = "fp32"
    assert analysis_runs.config_differences(config, tmp_path) == ["qat_actors"]


# QAT sweep.


def test_table2_measures_reused_runs_and_lists_the_rest_as_pending(trained_run: Path,
                                                                    tmp_path: Path) -> None:
    rows = table2.select_rows(["dqn:cartpole", "ppo:cartpole", "dqn:pong"])
    reuse = table2.parse_reuse([f"dqn:cartpole={trained_run}"])
    measured, reasons = table2.run_table(rows, tmp_path, episodes=3, train=False, reuse=reuse)
    assert list(measured) == ["dqn:cartpole"]
    cells = measured["dqn:cartpole"]
    assert cells["divergence"] == "kl" and cells["fp32"]["divergence"] == 0.0
    assert cells["fp32"]["relative_error"] == 0.0 and cells["episodes"] == 3
    for spec in ("fp16", "affine_int8", "int8"):
        assert cells[spec]["divergence"] > 0.0  # a real quantization, measured
    assert reasons["dqn:pong"].startswith("pending: needs a GPU")
    assert "--rows=ppo:cartpole --train" in reasons["ppo:cartpole"]
    text = table2.markdown(rows, measured, reasons, 3, "python -m experiments.table2")
    assert "| dqn | cartpole |" in text and "500 / 500 / 500, 0.1 |" in text
    assert "| dqn | pong | pending: needs a GPU" in text


def test_table2_keeps_earlier_cells_for_rows_without_a_run(tmp_path: Path) -> None:
    rows = table2.select_rows(["a2c:cartpole", "ppo:cartpole", "dqn:pong"])
    earlier = {"machine": "Milan", "episodes": 20, "pending": {}, "rows": {
        "a2c:cartpole": {"row": "a2c:cartpole", "run_dir": "runs/table2/a2c_cartpole",
                         "divergence": "kl", **{s: {"mean": 500.0, "std": 0.0,
                                                    "relative_error": 0.0, "divergence": 0.0}
                                                for s in table2.QUANTIZERS}},
        "ppo:cartpole": {"row": "ppo:cartpole", "run_dir": "old"}}}
    path = tmp_path / "table2.json"
    path.write_text(json.dumps(earlier))
    measured = {"ppo:cartpole": {"row": "ppo:cartpole", "run_dir": "new"}}
    kept = table2.kept_cells(path, rows, measured)
    assert list(kept) == ["a2c:cartpole"] and kept["a2c:cartpole"]["kept_from"] == "Milan"
    text = table2.markdown(rows, kept, {"ppo:cartpole": "pending", "dqn:pong": "pending"}, 20,
                           "cmd")
    assert "`runs/table2/a2c_cartpole` (kept: measured on Milan, 20 episodes) |" in text
    # Kept again by a table made on another machine with another episode count, a cell still
    # names the machine and the count that measured it.
    path.write_text(json.dumps({**earlier, "machine": "Xeon", "episodes": 100, "rows": kept}))
    again = table2.kept_cells(path, rows, measured)["a2c:cartpole"]
    assert again["kept_from"] == "Milan" and again["episodes"] == 20
    # A cell an older table kept without recording its count gets none, not that table's.
    unknown = {k: v for k, v in kept["a2c:cartpole"].items() if k != "episodes"}
    path.write_text(json.dumps({**earlier, "machine": "Xeon", "episodes": 100,
                                "rows": {"a2c:cartpole": unknown}}))
    assert "episodes" not in table2.kept_cells(path, rows, measured)["a2c:cartpole"]
    text = table2.markdown(rows, {"a2c:cartpole": unknown},
                           {"ppo:cartpole": "pending", "dqn:pong": "pending"}, 100, "cmd")
    assert "`runs/table2/a2c_cartpole` (kept: measured on Milan) |" in text
    path.write_text("[]")
    with pytest.raises(ValueError, match="not a table2.json"):
        table2.kept_cells(path, rows, measured)


def test_table2_refuses_bad_rows_and_reuse(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown --rows"):
        table2.select_rows(["dqn:halfcheetah"])
    with pytest.raises(ValueError, match="algorithm:task=run_dir"):
        table2.parse_reuse(["dqn:cartpole"])
    with pytest.raises(FileNotFoundError, match="no run directory"):
        table2.parse_reuse([f"dqn:cartpole={tmp_path / 'missing'}"])
    for row in table2.ROWS:  # every trainable row names a preset that exists
        if not row.pending:
            assert table2.load_preset(row.config).task


def test_qat_delay_counts_updates_on_the_queue_path(tmp_path: Path) -> None:
    config = table2.load_preset("configs/ppo_actorq.py:cartpole")
    # PPO CartPole: one learner step per 32-step unroll x 8 unrolls; 100k env steps.
    assert qat_sweep.expected_learner_steps(config) == 100_000 // 256 == 390
    plan = qat_sweep.plan_sweep(config, "4", "0", tmp_path)
    assert plan[1][0].learner.qat_delay_steps == round(0.5 * 390) == 195
    assert plan[1][0].quantizer == "rtn_int4"


def test_qat_sweep_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tiny_config(1000)
    config.replay.min_size = 200
    out = tmp_path / "qat"
    dirs = qat_sweep.run_sweep(config, "8,4", "0", out)
    assert [d.name for d in dirs] == ["fp32_seed0", "int8_qat_seed0", "int4_qat_seed0"]
    saved = json.loads((out / "int4_qat_seed0" / "config.json").read_text())
    # The actors run round-to-nearest: the numerics the policy trained through.
    assert saved["quantizer"] == "rtn_int4" and saved["learner"]["qat_bits"] == 4
    # Half of (1000 - 200) actor steps x 32 samples per insert / 64 per batch SGD steps.
    assert saved["learner"]["qat_delay_steps"] == round(0.5 * 800 * 32 / 64) == 200
    base = json.loads((out / "fp32_seed0" / "config.json").read_text())
    assert base["quantizer"] == "fp32" and base["learner"]["qat_bits"] is None

    assert qat_sweep.finished_sweep_runs(out) == sorted(Path(d).resolve() for d in dirs)
    md = qat_sweep.write_qat_report(dirs, out)
    report = json.loads((out / "qat.json").read_text())
    assert [r["precision"] for r in report["rows"]] == ["fp32", "int8", "int4"]
    assert report["rows"][0]["relative_error"] == 0.0
    assert all(np.isfinite(r["final_return_mean"]) for r in report["rows"])
    assert "| int4 QAT | rtn_int4 |" in md.read_text()
    assert (out / "qat.png").stat().st_size > 1000

    # The weight-distribution study on the trained fp32 run: one row per layer, a plot.
    weights_md = weight_distributions.weight_distributions([dirs[0]], tmp_path / "weights")
    layers = json.loads((tmp_path / "weights" / "weights.json").read_text())["runs"][0]["layers"]
    assert len(layers) == len(config.learner.hidden_sizes) + 1
    assert all(0 < r["per_channel"]["relative_rms_error"] < 0.05 for r in layers)
    assert "![dqn_" in weights_md.read_text()

    # Re-running reuses every finished run (nothing retrains).
    stamps = {d: (d / "summary.json").stat().st_mtime_ns for d in dirs}
    assert qat_sweep.run_sweep(config, "8,4", "0", out) == dirs
    assert {d: (d / "summary.json").stat().st_mtime_ns for d in dirs} == stamps
    with pytest.raises(ValueError, match="--bits"):
        qat_sweep.run_sweep(config, "9", "0", out)

    # --keep_records copies each run's records as it ends: a sweep that dies on its third run
    # has kept the first two.
    records = tmp_path / "records"
    real_run_or_load = qat_sweep.run_or_load

    def dies_on_int4(run_config: Any, path: Path, reuse: bool) -> Path:
        if path.name == "int4_qat_seed0":
            raise RuntimeError("machine lost")
        return real_run_or_load(run_config, path, reuse)

    monkeypatch.setattr(qat_sweep, "run_or_load", dies_on_int4)
    with pytest.raises(RuntimeError, match="machine lost"):
        qat_sweep.run_sweep(config, "8,4", "0", out, keep=records)
    assert sorted(p.name for p in records.iterdir()) == ["fp32_seed0", "int8_qat_seed0"]
    monkeypatch.setattr(qat_sweep, "run_or_load", real_run_or_load)

    # The runs' records alone rebuild the same report, with nothing retrained.
    assert qat_sweep.run_sweep(config, "8,4", "0", out, keep=records) == dirs
    copies = [records / d.name for d in dirs]
    assert sorted(p.name for p in (records / "int4_qat_seed0").iterdir()) == [
        "config.json", "energy.json", "eval.jsonl", "learner.jsonl", "summary.json"]
    assert qat_sweep.run_sweep(config, "8,4", "0", records) == copies
    assert not (records / "fp32_seed0" / "checkpoints").exists()
    qat_sweep.write_qat_report(copies, records)
    rebuilt = json.loads((records / "qat.json").read_text())
    assert [r["final_returns"] for r in rebuilt["rows"]] == [
        r["final_returns"] for r in report["rows"]]
    with pytest.raises(ValueError, match="not a finished run"):
        analysis_runs.copy_run_records([tmp_path / "weights"], records)


def test_qat_actors_fp32_publishes_the_fp32_policy_until_the_delay() -> None:
    """``qat_actors=fp32`` (QuaRL's QAT protocol): every quantized channel carries the learner's
    fp32 policy below the QAT delay and the quantizer's package from the delay on."""
    import jax

    from actorq.quantization.package import PolicyPackage
    from launchpad_programs import nodes

    config = tiny_config(1000)
    config.learner.qat_bits = 4
    config.learner.qat_delay_steps = 30
    assert nodes.fp32_package_versions(config) == 0  # the default: int<b> from the start
    config.qat_actors = "fp32"
    assert nodes.fp32_package_versions(config) == 30
    builder = nodes.make_builder_for(config)
    params = builder.policy_network.init(
        jax.random.key(0), np.zeros((1, builder.observation_size), np.float32))

    class Learner:
        steps = 0

        def policy_params(self) -> Any:
            return params

    learner = Learner()
    packages = nodes.LearnerPackages(learner, builder, ["rtn_int4", "fp32"],
                                     nodes.fp32_package_versions(config))
    seen = {}
    for learner.steps in (0, 29, 30, 31):
        version, data = packages.latest()
        seen[version] = PolicyPackage.from_bytes(data["rtn_int4"]).quantizer
    assert seen == {0: "fp32", 29: "fp32", 30: "rtn_int4", 31: "rtn_int4"}
    config.learner.qat_bits = None  # no QAT, nothing to wait for
    assert nodes.fp32_package_versions(config) == 0
    config.qat_actors = "int8"
    with pytest.raises(ValueError, match="unknown qat_actors 'int8'; valid: quantized, fp32"):
        nodes.fp32_package_versions(config)


def test_qat_sweep_with_fp32_actors_until_the_delay(tmp_path: Path) -> None:
    config = tiny_config(1000)
    config.replay.min_size = 200
    config.qat_actors = "fp32"
    out = tmp_path / "qat_fp32_actors"
    dirs = qat_sweep.run_sweep(config, "4", "0", out)
    delay = json.loads((dirs[1] / "config.json").read_text())["learner"]["qat_delay_steps"]
    assert delay == 200
    evals = [json.loads(line) for line in (dirs[1] / "eval.jsonl").read_text().splitlines()]
    # Below the delay the deployed package is the fp32 policy: both evaluations score the same.
    early = [e for e in evals if e["policy_version"] < delay]
    assert early and all(e["eval_return"] == e["eval_return_fp32"] for e in early)
    assert max(e["policy_version"] for e in evals) > delay
    rows = qat_sweep.qat_rows(dirs)
    assert [r["actor_quantizer"] for r in rows] == ["fp32", "fp32, then rtn_int4"]
    # One fp32 baseline serves both protocols (without QAT the switch does nothing).
    assert json.loads((dirs[0] / "config.json").read_text())["qat_actors"] == "quantized"
    # A sweep directory that mixes the two protocols is refused rather than averaged.
    mixed = tiny_config(1000)
    mixed.replay.min_size = 200
    other = qat_sweep.run_sweep(mixed, "4", "1", out)
    with pytest.raises(ValueError, match="actors differ"):
        qat_sweep.qat_rows([*dirs, *other])


def test_qat_rows_judge_each_width_against_fp32_on_its_own_seeds(tmp_path: Path) -> None:
    """A width run on fewer seeds than fp32 is compared with fp32 on those seeds, not with the
    mean of seeds it did not run; a seed without an fp32 run falls back to every fp32 seed."""

    def run(name: str, seed: int, bits: int | None, final: float) -> Path:
        path = tmp_path / f"{name}_seed{seed}"
        path.mkdir()
        quantizer = "fp32" if bits is None else f"rtn_int{bits}"
        config = {"agent": "a2c", "task": "halfcheetah", "quantizer": quantizer, "seed": seed,
                  "learner": {"qat_bits": bits, "qat_delay_steps": 0 if bits is None else 50}}
        (path / "config.json").write_text(json.dumps(config))
        # Ten evaluations: the last 10% (one) is the final return.
        lines = [json.dumps({"actor_steps": 100 * i, "learner_steps": 10 * i,
                             "wall_time_s": float(i), "eval_return": 0.0 if i < 9 else final})
                 for i in range(10)]
        (path / "eval.jsonl").write_text("\n".join(lines) + "\n")
        (path / "summary.json").write_text(json.dumps({"interrupted": False}))
        return path

    dirs = [run("fp32", 0, None, 4000.0), run("fp32", 1, None, 2000.0),
            run("int4_qat", 0, 4, 3600.0), run("int4_qat", 1, 4, 2200.0),
            run("int3_qat", 0, 3, 3600.0), run("int2_qat", 2, 2, 2700.0)]
    rows = {r["precision"]: r for r in qat_sweep.qat_rows(dirs)}
    assert rows["fp32"]["baseline_return"] == 3000.0 and rows["fp32"]["relative_error"] == 0.0
    assert rows["int4"]["baseline_seeds"] == [0, 1]
    assert rows["int4"]["relative_error"] == pytest.approx((3000.0 - 2900.0) / 3000.0)
    # int3 ran seed 0 only: judged against seed 0's fp32 (10% below), not the mean (20% above).
    assert rows["int3"]["baseline_seeds"] == [0] and rows["int3"]["baseline_return"] == 4000.0
    assert rows["int3"]["relative_error"] == pytest.approx(0.1)
    # Seed 2 has no fp32 run: every fp32 seed, named in the table.
    assert rows["int2"]["baseline_seeds"] == [0, 1]
    assert rows["int2"]["relative_error"] == pytest.approx(0.1)
    text = qat_sweep.qat_markdown(list(rows.values()))
    assert "| int3 QAT | rtn_int3 | 50 | 0 | 3600.00 ± 0.00 | 4000.00 | 10.00% |" in text
    assert "| 2700.00 ± 0.00 | 3000.00 (seeds 0, 1) | 10.00% |" in text


# Speedup report (read mode) over synthetic runs.


def write_synthetic_run(root: Path, quantizer: str, seed: int, speed: float) -> Path:
    run = root / f"{quantizer}_seed{seed}"
    run.mkdir(parents=True)
    config = {"agent": "dqn", "task": "cartpole", "quantizer": quantizer, "seed": seed,
              "pull_period": 100}
    (run / "config.json").write_text(json.dumps(config))
    lines = [
        json.dumps({"actor_steps": 1000 * i, "learner_steps": 100 * i,
                    "wall_time_s": 10.0 * i / speed, "eval_return": min(20.0 * i, 200.0)})
        for i in range(30)
    ]
    (run / "eval.jsonl").write_text("\n".join(lines) + "\n")
    (run / "energy.json").write_text(json.dumps({"energy_kwh": 0.01 / speed,
                                                 "emissions_kg": 0.004 / speed}))
    actor = {f"{s}_s": 1.0 / speed for s in ("inference", "env", "pull", "deserialize", "load")}
    breakdown = {"actor_0": actor, "actor_1": {k: 3 * v for k, v in actor.items()}}
    (run / "breakdown.json").write_text(json.dumps(breakdown))
    (run / "summary.json").write_text(json.dumps({"interrupted": False}))
    return run


def test_a_mixed_fleet_breakdown_is_split_by_each_actors_precision(tmp_path: Path) -> None:
    run = write_synthetic_run(tmp_path / "runs", "int8", 0, 1.0)
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "actor_quantizers": "fp32,int8"}))
    breakdown = json.loads((run / "breakdown.json").read_text())
    breakdown["actor_0"]["precision"], breakdown["actor_1"]["precision"] = "fp32", "int8"
    (run / "breakdown.json").write_text(json.dumps(breakdown))
    means = analysis_report.mean_breakdowns([run])[("dqn", "cartpole")]
    assert set(means) == {"fp32 in fleet:fp32+int8", "int8 in fleet:fp32+int8"}
    assert means["fp32 in fleet:fp32+int8"]["inference"] == pytest.approx(1.0)
    assert means["int8 in fleet:fp32+int8"]["inference"] == pytest.approx(3.0)


def test_speedup_report_read_mode(tmp_path: Path) -> None:
    runs = [write_synthetic_run(tmp_path / "runs", q, s, speed)
            for q, speed in (("fp32", 1.0), ("int8", 2.0)) for s in (0, 1)]
    means = analysis_report.mean_breakdowns(runs)
    # Actors (1 s and 3 s) average to 2 s; both seeds agree.
    assert means[("dqn", "cartpole")]["fp32"]["inference"] == pytest.approx(2.0)
    assert means[("dqn", "cartpole")]["int8"]["pull"] == pytest.approx(1.0)

    out = tmp_path / "report"
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.speedup_report",
         f"--runs_root={tmp_path / 'runs'}", f"--out_dir={out}"],
        cwd=REPO, capture_output=True, text=True, env=env, timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = (out / "speedup.md").read_text()
    assert "| cartpole | DQN | int8 | 0, 1 |" in text and "2.00x" in text
    assert "| int8 | 1.000 |" in text  # breakdown table, mean over actors and seeds
    assert text in proc.stdout
    assert (out / "breakdown_dqn_cartpole.png").stat().st_size > 1000
    rows = json.loads((out / "speedup.json").read_text())["rows"]
    assert rows[1]["co2_ratio"] == pytest.approx(2.0)

    proc = subprocess.run(
        [sys.executable, "-m", "experiments.speedup_report"],
        cwd=REPO, capture_output=True, text=True, env=env, timeout=180,
    )
    assert proc.returncode != 0 and "--run_dirs/--runs_root" in proc.stderr


# Pull-period ablation.


def test_pull_period_ablation_end_to_end(tmp_path: Path) -> None:
    config = tiny_config(600)
    config.replay.min_size = 100
    # ~1 learner call per 32 actor steps: new policy versions keep coming, cheaply.
    config.replay.samples_per_insert = 8.0
    config.eval_every_steps = 10_000
    config.eval_episodes = 1
    out = tmp_path / "pull"
    dirs = pull_period_ablation.run_ablation(config, "30,300", "fp32,int8", "0", out)
    assert len(dirs) == 4
    md = pull_period_ablation.write_ablation_report(dirs, out)
    rows = json.loads((out / "pull_period.json").read_text())["rows"]
    assert [(r["pull_period"], r["precision"]) for r in rows] == [
        (30, "fp32"), (30, "int8"), (300, "fp32"), (300, "int8")]
    for r in rows:
        assert r["communication_fraction"] + r["computation_fraction"] == pytest.approx(1.0)
        assert 0.0 < r["communication_fraction"] < 1.0
        assert r["env_steps"] == 600
    by_key = {(r["pull_period"], r["precision"]): r for r in rows}
    for precision in ("fp32", "int8"):
        assert by_key[(30, precision)]["packages_loaded"] > by_key[(300, precision)][
            "packages_loaded"]
    assert by_key[(30, "int8")]["bytes_per_package"] < by_key[(30, "fp32")]["bytes_per_package"]
    text = md.read_text()
    assert "| cartpole | DQN | 30 | int8 |" in text
    assert (out / "pull_period_dqn_cartpole.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="pull_periods"):
        pull_period_ablation.run_ablation(config, "0", "fp32", "0", out)
    with pytest.raises(ValueError, match="unknown quantizer"):
        pull_period_ablation.run_ablation(config, "30", "fp32,int1x", "0", out)


def test_ptq_study_calibrates_gptq_on_episodes_it_does_not_score(trained_run: Path,
                                                                  tmp_path: Path) -> None:
    from actorq.analysis.ptq import (
        CALIBRATION_EPISODES,
        CALIBRATION_SIZE,
        calibration_observations,
        episode_seeds,
    )
    from actorq.analysis.trained_policy import load_trained_policy
    from actorq.runtime.policy_runtime import make_policy_runtime

    assert not set(episode_seeds(1, CALIBRATION_EPISODES)) & set(episode_seeds(0, 20))
    policy = load_trained_policy(trained_run)
    runtime = make_policy_runtime("xla")
    runtime.load(policy.package("fp32"))
    calibration = calibration_observations(policy, runtime, seed=0)
    assert 0 < len(calibration) <= CALIBRATION_SIZE and calibration.shape[1] == 4
    assert policy.package("gptq_uact_int8", calibration).to_bytes() != \
        policy.package("gptq_uact_int8").to_bytes()
    out = tmp_path / "ptq"
    ptq_study(trained_run, "int8,gptq_uact_int8", episodes=2, out_dir=out)
    rows = {r["quantizer"]: r for r in json.loads((out / "ptq.json").read_text())["results"]}
    assert list(rows) == ["fp32", "int8", "gptq_uact_int8"]
    assert 0.5 < rows["gptq_uact_int8"]["agreement"] <= 1.0
