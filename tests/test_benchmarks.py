"""The benchmarks' own logic: ratio bounds, the envs-per-actor loop and real-observation numerics.

Timings are never asserted (benchmarks print measured ratios); these check that what the
benchmarks compute from their measurements is right and that they run end to end on tiny policies.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import actor_throughput, envs_per_actor, policy_inference


def _result(steps_per_s: float, inference_ms: float, package_bytes: int) -> dict:
    return {"steps_per_s": steps_per_s, "inference_ms_per_step": inference_ms,
            "package_bytes": package_bytes}


def test_ratio_bounds_decompose_the_step():
    # fp32: 4 ms/step of which 3.2 ms inference; int8: 1.25 ms/step of which 0.8 ms inference.
    fp32, int8 = _result(250.0, 3.2, 32_000_000), _result(800.0, 0.8, 8_000_000)
    b = actor_throughput.ratio_bounds(fp32, int8)
    assert b["ratio"] == pytest.approx(3.2)
    assert b["inference_ratio"] == pytest.approx(4.0)
    assert b["bytes_ratio"] == pytest.approx(4.0)
    assert b["fp32_gbps"] == pytest.approx(10.0) and b["int8_gbps"] == pytest.approx(10.0)
    assert b["fp32_rest_ms"] == pytest.approx(0.8) and b["int8_rest_ms"] == pytest.approx(0.45)
    assert b["ceiling_free_inference"] == pytest.approx(4.0 / 0.45)
    assert b["ceiling_bytes"] == pytest.approx(4.0 / (0.8 + 0.45))
    # With any time outside inference, the ratio stays below the inference ratio.
    assert b["ratio"] < b["inference_ratio"]
    # With 4 environments per actor one call (one pass over the weights) serves 4 steps.
    fp32["envs_per_actor"] = int8["envs_per_actor"] = 4
    b4 = actor_throughput.ratio_bounds(fp32, int8)
    assert b4["fp32_gbps"] == pytest.approx(2.5) and b4["ratio"] == b["ratio"]


def test_envs_per_actor_loop_counts_every_environment_step():
    from actorq.envs import make_environment
    from actorq.envs.batched import BatchedEnvironment

    class CountingPolicy:
        def __init__(self) -> None:
            self.rows: list[int] = []

        def __call__(self, observations: np.ndarray) -> np.ndarray:
            self.rows.append(observations.shape[0])
            return np.zeros((observations.shape[0], 1), np.float32)

    env = BatchedEnvironment([make_environment("cartpole_balance", seed=i) for i in range(3)])
    policy = CountingPolicy()
    r = envs_per_actor.run_loop(env, policy, steps=30, sigma=0.1, seed=0)
    # 3 warm-up calls, then 30 // 3 = 10 batched calls of 3 rows each.
    assert policy.rows == [3] * 13
    assert r["env_steps_per_s"] > 0 and r["ms_per_env_step"] > 0
    assert r["inference_ms_per_env_step"] == pytest.approx(r["ms_per_call"] / 3)


def test_envs_per_actor_runs_end_to_end(capsys, tmp_path, monkeypatch):
    import os

    for var in ("XLA_FLAGS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.setenv(var, os.environ.get(var, ""))  # main() sets them; restored after
    out = tmp_path / "epa.json"
    envs_per_actor.main(["--task=cartpole_balance", "--envs=1,2", "--hidden=32,32", "--steps=40",
                         "--repeats=1", "--cpu=-1", f"--json_out={out}"])
    text = capsys.readouterr().out
    assert "envs/actor 2: int8/fp32 env steps/s" in text
    import json

    rows = json.loads(out.read_text())
    assert set(rows) == {"1/fp32", "1/int8", "2/fp32", "2/int8"}


def test_task_numerics_flags_runtimes_against_the_reference():
    """The real-observation numerics section: exact runtimes sit at ~0, and the reference int8's
    distance from fp32 is reported for scale."""
    import actorq.quantization as q
    from actorq.runtime.policy_runtime import make_policy_runtime

    args = policy_inference.parse_args(["--hidden=32", "--layers=2", "--obs=24", "--act=6",
                                        "--diff_observations=20"])
    net, params = policy_inference.make_params(args)
    packages = {spec: q.make_quantizer(spec).quantize(params, net, 1) for spec in ("fp32", "int8")}
    references = {spec: q.make_reference_forward(p) for spec, p in packages.items()}
    runtime = make_policy_runtime("onnxruntime")
    runtime.load(packages["int8"])
    anchors = {name: policy_inference.ort_dynamic_anchor(packages["fp32"], 1, **settings)
               for name, settings in policy_inference.ORT_DYNAMIC_ANCHORS.items()}
    result = policy_inference.task_numerics(args, {("onnxruntime", "int8"): runtime}, references,
                                            anchors, references["fp32"])
    assert result["task"] == "walker_stand" and result["observations"] == 20
    assert result["rows"]["onnxruntime/int8"]["max"] < policy_inference.INT8_DIFF_BAR
    assert result["reference_int8_vs_fp32"]["max"] > 0  # int8 really is a different network
    # ORT's own int8 models of the fp32 policy, each a different int8 network from fp32
    assert set(result["anchors_vs_fp32"]) == {"ort-dynamic", "ort-dynamic-7bit", "ort-dynamic-u8"}
    assert all(0 < gap["median"] <= gap["max"] < 1 for gap in result["anchors_vs_fp32"].values())
    # A policy whose input size does not match the task is skipped, with a note.
    args.obs = 5
    assert "note" in policy_inference.task_numerics(args, {}, references)


def test_actor_throughput_runs_real_actor_processes_and_keeps_the_best_round(tmp_path):
    """Tiny policy, gym cartpole: each configuration is a spawned actor process, twice."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    out = tmp_path / "at.json"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.actor_throughput", "--task=cartpole", "--hidden=32,32",
         "--steps=300", "--rounds=2", "--runtime=onnxruntime", "--pull_period=100",
         "--republish_every_pull", f"--json_out={out}"],
        cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("round 2/2") == 2  # fp32 and int8, second round
    assert "fastest int8 (onnxruntime) / fastest fp32 (onnxruntime)" in result.stdout
    rows = json.loads(out.read_text())
    for key in ("fp32/onnxruntime", "int8/onnxruntime"):
        row = rows[key]
        # A new version is published before each pull, whatever the machine's speed: the pulls
        # due at steps 100 and 200 (the one at step 0 is start-up; the one due at step 300 would
        # be taken by a next action, and the budget ends there).
        assert row["steps"] > 250 and row["steps_per_s"] > 0 and row["num_pulls"] == 2
        assert row["round"] in (1, 2) and row["imports_jax"] is False
        assert row["blocked_ms_per_step"] > 0  # held at mid-period until each version is out
        # The actor's own memory, not its parent's: the parent holds JAX and the network, the
        # ONNX Runtime actor neither, on any machine.
        assert 0 < row["peak_rss_mib"] < row["parent_peak_rss_mib"]
    assert rows["fp32/onnxruntime"]["package_bytes"] > rows["int8/onnxruntime"]["package_bytes"]


def test_actor_throughput_runs_pixel_actors_on_static_code_packages(tmp_path):
    """MinAtar Breakout: the preset's conv network, its int8 package calibrated on a random
    rollout (static codes), acting in a spawned actor process."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from benchmarks.actor_throughput import CALIBRATION_ROWS, random_observations

    frames = random_observations("minatar_breakout", CALIBRATION_ROWS, 0)
    assert frames.shape == (CALIBRATION_ROWS, 10, 10, 4)
    out = tmp_path / "at.json"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.actor_throughput", "--task=minatar_breakout",
         "--steps=200", "--quantizers=int8", "--runtime=onnxruntime", "--pull_period=100",
         "--republish_every_pull", f"--json_out={out}"],
        cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "the preset's conv network" in result.stdout
    row = json.loads(out.read_text())["int8/onnxruntime"]
    assert row["steps"] > 150 and row["num_pulls"] == 1 and row["imports_jax"] is False


def test_random_observations_act_on_tasks_with_0d_action_bounds():
    """dm_control specs give 0-d bounds (walker_stand: shape (6,), minimum -1.0): the random
    actions that calibrate the int8 package must still have the spec's shape."""
    from benchmarks.actor_throughput import random_observations

    observations = random_observations("walker_stand", 5, 0)
    assert observations.shape == (5, 24)


def test_conv_learner_loop_times_both_variants_and_restores_the_learners():
    """benchmarks.conv_learner_loop: its batch fits the preset's table, both variants step the
    learner, and the learners' own scan is back in place afterwards (also after a failure)."""
    from actorq.agents.dqn import learning as dqn_learning
    from actorq.agents.on_policy import learning as on_policy_learning
    from actorq.networks.conv import scan_without_loop
    from benchmarks import conv_learner_loop
    from configs import dqn_actorq
    from launchpad_programs.nodes import make_builder_for

    builder = make_builder_for(dqn_actorq.get_config("minatar_breakout"))
    batch = conv_learner_loop.one_batch(builder)
    assert batch["observation"].shape == (1, builder.config.batch_size, 10, 10, 4)
    assert batch["observation"].dtype == np.uint8
    calls = []

    def counting_scan(step, init, xs, unrolled):
        calls.append(unrolled)
        return conv_learner_loop._scan_with_loop(step, init, xs, unrolled)

    assert conv_learner_loop.time_learner(builder, batch, 1, counting_scan) > 0
    assert calls and all(calls)  # the conv learner asked for its steps unrolled
    assert conv_learner_loop.time_learner(builder, batch, 1) > 0

    def failing_scan(*args, **kwargs):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        conv_learner_loop.time_learner(builder, batch, 1, failing_scan)
    assert dqn_learning.scan_without_loop is scan_without_loop
    assert on_policy_learning.scan_without_loop is scan_without_loop
