"""``python -m benchmarks.conv_inference`` end to end on its smallest settings.

Timings are never asserted: only that the report, the json and every ratio come out.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run(*flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchmarks.conv_inference", *flags],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


def test_conv_inference_runs_and_reports_every_ratio(tmp_path):
    proc = _run("--networks=minatar", "--batch_sizes=1", "--rounds=2", "--min_time=0.002",
                "--calibration_frames=2", f"--out_dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout
    assert "| batch | runtime | precision | ms (median) |" in text
    assert "## Goals" in text and "ORT's static int8" in text
    assert (tmp_path / "conv_inference.md").read_text().strip() in text
    result = json.loads((tmp_path / "conv_inference.json").read_text())
    assert {"config", "machine", "versions", "networks", "goals", "wall_s"} <= set(result)
    assert result["machine"]["name"] and result["machine"]["cpu_over_wall"] > 0
    (net,) = result["networks"]
    assert net["network"] == "minatar"
    assert {"package_bytes", "bytes_fp32_over_int8", "rows", "ratios", "anchor_graphs"} <= set(net)
    rows = {(r["runtime"], r["precision"]) for r in net["rows"]}
    assert {(rt, p) for rt in ("xla", "onnxruntime") for p in ("fp32", "fp16", "int8")} <= rows
    assert {("ort-static-qdq", "int8"), ("ort-static-qoperator", "int8")} <= rows
    # Every runtime's int8 (and float) output is the reference of its own package.
    for r in net["rows"]:
        assert r["ms"] > 0 and math.isfinite(r["max_abs_diff"])
        if r["diff_vs"] == "same pkg":
            assert r["max_abs_diff"] < 1e-4, r
    ratios = [net["bytes_fp32_over_int8"]]
    ratios += [r["speedup_vs_fastest_fp32"] for r in net["rows"]]
    for r in net["ratios"]:
        for name in ("speedup_vs_own_fp32", "speedup_vs_fastest_fp32", "vs_ort_static_int8"):
            ratios += [r[name + suffix] for suffix in ("", "_min", "_cpu")]
    ratios += [g["measured"] for g in result["goals"]]
    assert {r["runtime"] for r in net["ratios"]} >= {"xla", "onnxruntime", "best"}
    assert all(isinstance(v, float) and math.isfinite(v) and v > 0 for v in ratios), ratios
    assert {g["goal"] for g in result["goals"]} == {
        "batch-1 int8 >= 2.5x the fastest fp32", "batch-1 int8 >= 1x ORT's static int8",
        "int8 package ~4x smaller"}


def test_conv_inference_bad_input_is_one_line(tmp_path):
    for flags in (["--networks=atari"], ["--batch_sizes=0"], ["--rounds=0"],
                  [f"--out_dir={tmp_path / 'file'}"]):
        (tmp_path / "file").write_text("not a directory")
        proc = _run(*flags)
        assert proc.returncode == 2, (flags, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), (flags, proc.stderr)
