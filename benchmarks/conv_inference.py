"""Conv policy inference speed per runtime and precision, with ONNX Runtime's own int8 as anchor.

    python -m benchmarks.conv_inference [--networks=nature,minatar] [--batch_sizes=1,8]
        [--rounds=31] [--min_time=0.03] [--out_dir=docs/results/conv_inference]

Issue 24, section 5. For each conv network, with random weights (biases too) and random frames:

* ``nature``: the Nature DQN CNN on ``84x84x4`` uint8 frames (codes 0..255, input_scale 1/255),
  6 actions;
* ``minatar``: the MinAtar network on ``10x10x4`` 0/1 channel codes (input_scale 1), 6 actions;

it times, on one thread at each batch size, the actor runtimes ``xla`` and ``onnxruntime`` on
the ``fp32``, ``fp16``, ``int8`` and ``rtn_int8`` packages (``make_quantizer(spec).quantize``;
``int8``, the default recipe, calibrated on the anchors' calibration frames: static codes between
the convolutions; ``rtn_int8`` uncalibrated: dynamic per-sample codes), and three
anchors made by ONNX Runtime's own quantization tools from the fp32 package's model
(``onnx_runtime.build_model``: uint8 input, Cast + Mul, then the fp32 graph):

* ``ort-static-qdq`` / ``ort-static-qoperator``: ``quantize_static`` in QDQ and QOperator
  format, per-channel weights (as the paper quantizes convolutions), uint8 activations and int8
  weights (ORT's x86 choice), MinMax calibration on ``--calibration_frames`` random frames. The
  faster of the two at each batch is "ORT's static int8";
* ``ort-dynamic``: ``quantize_dynamic`` (per-channel int8 weights; Conv -> ConvInteger).

Each time is the median over ``--rounds`` timings (each about ``--min_time`` seconds of calls)
after a warm-up; all configurations of a network and batch are timed in one interleaved
round-robin (``actorq.metrics.benchmarking.time_round_robin``), so every ratio compares times
measured together. Ratios (> 1 = int8 faster): int8 vs the same runtime's fp32, int8 vs the
fastest fp32 row (any runtime), exact int8 vs ORT's static int8, and package bytes fp32 / int8
(``len(package.to_bytes())``). The time ratios are by median wall time (the headline, used for
the goals), and also by best-of-rounds wall time and by process CPU time, which other processes
sharing the core disturb less; the machine line gives process CPU / wall over all timings (1.00
when the core was ours alone). ``max|diff|`` is the max abs output difference from
``make_reference_forward`` of the same package on the timed frames (an exactness check: ~1e-6 or
less; int8 rows above 1e-5 are flagged, see EXACT_DIFF_BAR); for the anchors it is measured
against the fp32 package, so it is their quantization error. ``cpu ms`` is process CPU time per
call (all threads), steadier than wall time when other processes share the core.

The issue's goals are printed with where each stands: batch-1 int8 >= 2.5x the fastest fp32;
int8 >= 1.0x ORT's static int8; int8 package ~4x smaller than fp32. ``--out_dir`` receives
``conv_inference.md`` (the printed report) and ``conv_inference.json`` (every number).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from actorq.bounds import LAYER_SIZES, NON_NEGATIVE_INT, POSITIVE, POSITIVE_INT, Bounds
from actorq.command_line import ArgumentParser, check_args, check_writable_dir, one_line
from actorq.metrics.benchmarking import library_versions, time_round_robin
from launchpad_programs.thread_env import set_thread_env

# name -> (torso, observation shape, codes per pixel, input_scale, actions, description)
NETWORKS = {
    "nature": ("nature", (84, 84, 4), 256, 1.0 / 255.0, 6,
               "Nature DQN CNN (32 8x8/4, 64 4x4/2, 64 3x3/1, 512), 84x84x4 uint8 frames, "
               "input_scale 1/255, 6 actions"),
    "minatar": ("minatar", (10, 10, 4), 2, 1.0, 6,
                "MinAtar net (16 3x3/1, 128), 10x10x4 0/1 codes, input_scale 1, 6 actions"),
}
RUNTIMES = ("xla", "onnxruntime")
PRECISIONS = ("fp32", "fp16", "int8", "rtn_int8")
STATIC_ANCHORS = ("ort-static-qdq", "ort-static-qoperator")
ANCHORS = (*STATIC_ANCHORS, "ort-dynamic")
# The issue's goals: batch-1 int8 / fastest fp32, int8 / ORT's static int8, fp32 / int8 bytes.
SPEEDUP_GOAL = 2.5
ORT_GOAL = 1.0
BYTES_GOAL = 4.0
BYTES_GOAL_TOLERANCE = 0.1  # "~4x": within 10%
# Exactness check of our int8 rows vs the reference forward of the same package. Float rows
# differ from it only by summation order. An int8 row shares the integers, but an ulp of
# difference in a float scale can move one activation code across a rounding boundary (seen here
# on ~1% of random Nature frames: ~3e-4 on outputs of ~0.2; tests/test_policy_runtime.py).
EXACT_DIFF_BAR = 1e-5
DEFAULT_OUT_DIR = "docs/results/conv_inference"
# Ratios by median wall time (the headline), best-of-rounds wall time, and process CPU time.
MEASURES = {"ms": "", "min_ms": "_min", "cpu_ms": "_cpu"}


def parse_args(argv=None) -> argparse.Namespace:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    ints = lambda s: [int(v) for v in s.split(",") if v.strip()]  # noqa: E731
    names = lambda s: [v.strip() for v in s.split(",") if v.strip()]  # noqa: E731
    p.add_argument("--networks", type=names, default=list(NETWORKS),
                   help=f"comma-separated subset of {', '.join(NETWORKS)}")
    p.add_argument("--batch_sizes", type=ints, default=[1, 8])
    p.add_argument("--rounds", type=int, default=31, help="timings per configuration (median)")
    p.add_argument("--min_time", type=float, default=0.03, help="seconds of calls per timing")
    p.add_argument("--calibration_frames", type=int, default=16,
                   help="random frames for quantize_static's calibration")
    p.add_argument("--cpu", type=int, default=-2,
                   help="pin the process to this CPU; -2 = the last allowed CPU, -1 = do not pin "
                        "(pinning keeps XLA's helper threads to one core)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out_dir", default=DEFAULT_OUT_DIR,
                   help="where conv_inference.md / .json go ('' = print only)")
    args = p.parse_args(argv)
    check_args(p, args, {"batch_sizes": LAYER_SIZES, "rounds": POSITIVE_INT,
                         "min_time": POSITIVE, "calibration_frames": POSITIVE_INT,
                         "cpu": Bounds(low=-2, integer=True), "seed": NON_NEGATIVE_INT})
    unknown = [n for n in args.networks if n not in NETWORKS]
    if unknown or not args.networks:
        p.error(f"--networks: unknown {unknown}; valid: {', '.join(NETWORKS)}")
    if not args.batch_sizes:
        p.error("--batch_sizes is empty")
    for flag in ("networks", "batch_sizes"):
        values = getattr(args, flag)
        if len(set(values)) != len(values):
            p.error(f"--{flag} has duplicates: {values}")
    if args.out_dir:
        try:
            check_writable_dir(args.out_dir, "--out_dir")
        except OSError as error:
            p.error(str(error))
    return args


# ----------------------------------------------------------------------------- model + anchors


def make_network(name: str, seed: int):
    """The network and random parameters: kernels uniform in ``+-1/sqrt(fan_in)`` (the
    network's own initializer's range), biases ``0.1 * N(0, 1)`` so every runtime must get them
    right. Drawn with NumPy on ``jax.eval_shape``'s shapes: compiling JAX's random number
    generator costs seconds per shape on XLA:CPU."""
    import jax
    import numpy as np

    from actorq.networks.conv import make_torso_network

    torso, shape, _, scale, actions, _ = NETWORKS[name]
    net = make_torso_network(torso, actions, shape, scale)
    shapes = jax.eval_shape(net.init, jax.random.key(seed), np.zeros((1, *shape), np.uint8))
    rng = np.random.default_rng(seed)

    def draw(path, leaf):
        if "bias" in jax.tree_util.keystr(path):
            return (0.1 * rng.standard_normal(leaf.shape)).astype(np.float32)
        limit = 1.0 / np.sqrt(np.prod(leaf.shape[:-1]))
        return rng.uniform(-limit, limit, leaf.shape).astype(np.float32)

    return net, jax.tree_util.tree_map_with_path(draw, shapes)


def frames(name: str, batch: int, rng):
    """``batch`` random observations of network ``name``: uint8 codes ``[batch, H, W, C]``."""
    import numpy as np

    _, shape, codes, *_ = NETWORKS[name]
    return rng.integers(0, codes, (batch, *shape), dtype=np.uint8)


def ort_anchors(fp32_package, calibration: list, threads: int = 1) -> tuple[dict, dict, list]:
    """ONNX Runtime's own int8 models of the fp32 package's model (see the module docstring).

    Returns (name -> callable, name -> {"model_ops", "session_ops"}, notes); an anchor ORT's
    tools fail on is left out with a note.
    """
    import logging

    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    from actorq.runtime import onnx_runtime

    logging.getLogger().setLevel(logging.ERROR)  # "consider pre-processing" and the like

    class FramesReader(CalibrationDataReader):
        def __init__(self) -> None:
            self._frames = iter(calibration)

        def get_next(self):
            frame = next(self._frames, None)
            return None if frame is None else {onnx_runtime.INPUT: frame}

    def static(quant_format):
        return lambda src, dst: quantize_static(
            src, dst, FramesReader(), quant_format=quant_format, per_channel=True,
            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)

    makers = {
        "ort-static-qdq": static(QuantFormat.QDQ),
        "ort-static-qoperator": static(QuantFormat.QOperator),
        "ort-dynamic": lambda src, dst: quantize_dynamic(
            src, dst, per_channel=True, weight_type=QuantType.QInt8),
    }
    calls, graphs, notes = {}, {}, []
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "fp32.onnx"
        onnx.save(onnx_runtime.build_model(fp32_package), src)
        for name, make in makers.items():
            dst, optimized = Path(tmp) / f"{name}.onnx", Path(tmp) / f"{name}.opt.onnx"
            try:
                make(src, dst)
                # What the session runs after ORT's graph optimisations (QDQ -> QLinearConv ...).
                options = onnx_runtime.session_options(threads)
                options.optimized_model_filepath = str(optimized)
                ort.InferenceSession(str(dst), options, providers=["CPUExecutionProvider"])
                session = ort.InferenceSession(str(dst), onnx_runtime.session_options(threads),
                                               providers=["CPUExecutionProvider"])
            except Exception as error:  # noqa: BLE001  (an anchor ORT's tools cannot make)
                notes.append(f"{name}: not measured, ORT failed: {one_line(error)}")
                continue
            graphs[name] = {
                "model_ops": sorted({n.op_type for n in onnx.load(str(dst)).graph.node}),
                "session_ops": sorted({n.op_type for n in onnx.load(str(optimized)).graph.node}),
            }
            calls[name] = _session_runner(session)
    return calls, graphs, notes


def _session_runner(session):
    in_name, out_name = session.get_inputs()[0].name, session.get_outputs()[0].name
    return lambda x: session.run([out_name], {in_name: x})[0]


# ----------------------------------------------------------------------------- measurement


def measure_network(name: str, args) -> dict:
    """Every runtime x precision and anchor of network ``name`` at every batch size."""
    import numpy as np

    import actorq.quantization as q
    from actorq.runtime.policy_runtime import make_policy_runtime

    net, params = make_network(name, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    calibration = [frames(name, 1, rng) for _ in range(args.calibration_frames)]
    # int8 calibrates on the frames that ORT's static anchor calibrates on (its static codes);
    # rtn_int8 is the uncalibrated package (dynamic per-sample codes).
    packages = {}
    for spec in PRECISIONS:
        quantizer = q.make_quantizer(spec)
        if spec == "int8":
            quantizer = quantizer.with_calibration(np.concatenate(calibration))
        packages[spec] = quantizer.quantize(params, net, version=1)
    references = {spec: q.make_reference_forward(pkg) for spec, pkg in packages.items()}
    package_bytes = {spec: len(pkg.to_bytes()) for spec, pkg in packages.items()}

    calls, reference_of = {}, {}
    for runtime_name in RUNTIMES:
        for spec, package in packages.items():
            runtime = make_policy_runtime(runtime_name)
            if hasattr(runtime, "threads"):
                runtime.threads = 1
            runtime.load(package)
            calls[(runtime_name, spec)] = runtime
            reference_of[(runtime_name, spec)] = (references[spec], "same pkg")
    anchor_calls, anchor_graphs, notes = ort_anchors(packages["fp32"], calibration)
    for anchor, fn in anchor_calls.items():
        calls[(anchor, "int8")] = fn
        reference_of[(anchor, "int8")] = (references["fp32"], "fp32 pkg")

    rows, ratios = [], []
    for batch in args.batch_sizes:
        x = frames(name, batch, rng)
        timings = time_round_robin(calls, x, args.rounds, 0, args.min_time)
        batch_rows = {}
        for key, timing in timings.items():
            reference, diff_vs = reference_of[key]
            diff = float(np.abs(np.asarray(calls[key](x), np.float32) - reference(x)).max())
            batch_rows[key] = {"runtime": key[0], "precision": key[1], "batch": batch,
                               **timing, "max_abs_diff": diff, "diff_vs": diff_vs}
        fastest_fp32 = min((k for k in batch_rows if k[1] == "fp32"),
                           key=lambda k: batch_rows[k]["ms"])
        for row in batch_rows.values():
            row["speedup_vs_fastest_fp32"] = batch_rows[fastest_fp32]["ms"] / row["ms"]
        rows += sorted(batch_rows.values(), key=lambda r: r["ms"])
        ratios += batch_ratios(batch, batch_rows, fastest_fp32)
    # Each package's quantization error on the last batch's frames (the anchors' diff column).
    error = {spec: float(np.abs(references[spec](x) - references["fp32"](x)).max())
             for spec in PRECISIONS if spec != "fp32"}
    return {
        "network": name,
        "description": NETWORKS[name][5],
        "input_shape": list(NETWORKS[name][1]),
        "package_bytes": package_bytes,
        "bytes_fp32_over_int8": package_bytes["fp32"] / package_bytes["int8"],
        "anchor_graphs": anchor_graphs,
        "rows": rows,
        "ratios": ratios,
        "error_vs_fp32": error,
        "notes": notes,
    }


def batch_ratios(batch: int, rows: dict, fastest_fp32: tuple) -> list[dict]:
    """Per runtime, for the best one and for ORT's static int8: int8 vs its own fp32, vs the
    fastest fp32 row, and vs ORT's static int8 (the faster format) at this batch (> 1 = int8
    faster). Each ratio by median wall time (the headline), and with suffix ``_min`` by
    best-of-rounds wall time and ``_cpu`` by process CPU time (each compares the fastest rows by
    that measure)."""
    static = [k for k in rows if k[0] in STATIC_ANCHORS]
    anchor = min(static, key=lambda k: rows[k]["ms"]) if static else None
    best = min(RUNTIMES, key=lambda r: rows[(r, "int8")]["ms"])
    entries = [(r, (r, "int8"), (r, "fp32")) for r in RUNTIMES]
    entries.append(("best", (best, "int8"), (best, "fp32")))
    if anchor:  # ORT's own int8 against the same fp32 baselines, for scale
        entries.append((anchor[0], anchor, ("onnxruntime", "fp32")))
    fp32_keys = [k for k in rows if k[1] == "fp32"]
    out = []
    for label, key, own_fp32 in entries:
        record = {
            "batch": batch,
            "runtime": label,
            "int8_runtime": key[0],
            "int8_ms": rows[key]["ms"],
            "fp32_ms": rows[own_fp32]["ms"],
            "fastest_fp32": "/".join(fastest_fp32),
            "fastest_fp32_ms": rows[fastest_fp32]["ms"],
            "ort_static": anchor[0] if anchor else None,
            "ort_static_ms": rows[anchor]["ms"] if anchor else None,
        }
        for measure, suffix in MEASURES.items():
            t = rows[key][measure]
            fastest = min(rows[k][measure] for k in fp32_keys)
            record[f"speedup_vs_own_fp32{suffix}"] = rows[own_fp32][measure] / t
            record[f"speedup_vs_fastest_fp32{suffix}"] = fastest / t
            record[f"vs_ort_static_int8{suffix}"] = (
                min(rows[k][measure] for k in static) / t if anchor else None)
        out.append(record)
    return out


def goals(networks: list[dict]) -> list[dict]:
    """Where each of the issue's goals stands, per network (measured, never assumed)."""
    out = []
    for net in networks:
        best = [r for r in net["ratios"] if r["runtime"] == "best"]
        batch1 = next((r for r in best if r["batch"] == 1), None)
        if batch1 is not None:
            value = batch1["speedup_vs_fastest_fp32"]
            out.append({"network": net["network"],
                        "goal": f"batch-1 int8 >= {SPEEDUP_GOAL:g}x the fastest fp32",
                        "measured": value, "met": value >= SPEEDUP_GOAL,
                        "detail": f"{batch1['int8_runtime']} int8 {batch1['int8_ms']:.3f} ms vs "
                                  f"{batch1['fastest_fp32']} {batch1['fastest_fp32_ms']:.3f} ms"
                                  + _other_measures(batch1, "speedup_vs_fastest_fp32")})
        for r in best:
            if r["vs_ort_static_int8"] is None:
                continue
            value = r["vs_ort_static_int8"]
            out.append({"network": net["network"],
                        "goal": f"batch-{r['batch']} int8 >= {ORT_GOAL:g}x ORT's static int8",
                        "measured": value, "met": value >= ORT_GOAL,
                        "detail": f"{r['int8_runtime']} int8 {r['int8_ms']:.3f} ms vs "
                                  f"{r['ort_static']} {r['ort_static_ms']:.3f} ms"
                                  + _other_measures(r, "vs_ort_static_int8")})
        value = net["bytes_fp32_over_int8"]
        out.append({"network": net["network"], "goal": f"int8 package ~{BYTES_GOAL:g}x smaller",
                    "measured": value,
                    "met": abs(value - BYTES_GOAL) <= BYTES_GOAL_TOLERANCE * BYTES_GOAL,
                    "detail": f"{net['package_bytes']['fp32']:,} -> "
                              f"{net['package_bytes']['int8']:,} bytes"})
    return out


def _other_measures(record: dict, ratio: str) -> str:
    return (f" (best-of-rounds {_x(record[ratio + '_min'])}, "
            f"process CPU {_x(record[ratio + '_cpu'])})")


# ----------------------------------------------------------------------------- report


def _x(value) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _x3(record: dict, ratio: str) -> str:
    """``median (best-of-rounds, cpu)`` of one ratio."""
    return (f"{_x(record[ratio])} ({_x(record[ratio + '_min'])}, "
            f"{_x(record[ratio + '_cpu'])})")


def report_lines(result: dict) -> list[str]:
    """The markdown report (what is printed and written to conv_inference.md)."""
    cfg, machine = result["config"], result["machine"]
    pinned = f"pinned to CPU {cfg['cpu']}" if cfg["cpu"] >= 0 else "not pinned"
    versions = ", ".join(f"{k} {v}" for k, v in result["versions"].items() if v)
    lines = [
        "# Conv policy inference: int8 vs fp32 and ONNX Runtime's own int8",
        "",
        f"Machine: {machine['name']}; one thread, {pinned}; loadavg "
        f"{machine['loadavg'][0]:.1f}; process CPU / wall over all timings "
        f"{machine['cpu_over_wall']:.2f} (1.00: the core was ours alone). {versions}.",
        f"Median of {cfg['rounds']} interleaved timings (each >= {cfg['min_time']:g} s of calls) "
        "after warm-up; ratios compare times from the same run. "
        "`python -m benchmarks.conv_inference "
        f"--networks={','.join(cfg['networks'])} "
        f"--batch_sizes={','.join(map(str, cfg['batch_sizes']))} --rounds={cfg['rounds']}`",
    ]
    for net in result["networks"]:
        b = net["package_bytes"]
        lines += [
            "", f"## {net['network']}: {net['description']}", "",
            f"Package bytes: fp32 {b['fp32']:,}, fp16 {b['fp16']:,}, int8 {b['int8']:,} "
            f"(fp32 / int8 = {net['bytes_fp32_over_int8']:.2f}x). Max abs output difference "
            "from the fp32 package (its quantization error): "
            + ", ".join(f"{spec} {err:.1e}" for spec, err in net["error_vs_fp32"].items())
            + ".", "",
            "| batch | runtime | precision | ms (median) | ms (min) | cpu ms | vs fastest fp32 "
            "| max abs diff | diff vs |",
            "|---:|---|---|---:|---:|---:|---:|---:|---|",
        ]
        for r in net["rows"]:
            flag = ""
            if (r["diff_vs"] == "same pkg" and r["precision"] in ("int8", "rtn_int8")
                    and r["max_abs_diff"] > EXACT_DIFF_BAR):
                flag = f" (above {EXACT_DIFF_BAR:g})"
            lines.append(
                f"| {r['batch']} | {r['runtime']} | {r['precision']} | {r['ms']:.3f} | "
                f"{r['min_ms']:.3f} | {r['cpu_ms']:.3f} | {_x(r['speedup_vs_fastest_fp32'])} | "
                f"{r['max_abs_diff']:.1e}{flag} | {r['diff_vs']} |")
        lines += [
            "", "int8 ratios (> 1 = int8 faster; ORT static = the faster of QDQ / QOperator); "
            "each by median wall time (by best-of-rounds wall time, by process CPU time):",
            "",
            "| batch | int8 of | int8 ms | vs own fp32 | vs fastest fp32 | vs ORT static int8 "
            "| ORT static |",
            "|---:|---|---:|---:|---:|---:|---|",
        ]
        for r in net["ratios"]:
            runtime = (f"best ({r['int8_runtime']})" if r["runtime"] == "best"
                       else r["runtime"])
            lines.append(
                f"| {r['batch']} | {runtime} | {r['int8_ms']:.3f} | "
                f"{_x3(r, 'speedup_vs_own_fp32')} | {_x3(r, 'speedup_vs_fastest_fp32')} | "
                f"{_x3(r, 'vs_ort_static_int8') if r['ort_static'] else '-'} | "
                f"{r['ort_static'] or '-'} |")
        for anchor, ops in net["anchor_graphs"].items():
            lines.append(f"- {anchor}: session runs {', '.join(ops['session_ops'])}")
        lines += [f"- note: {note}" for note in net["notes"]]
    lines += ["", "## Goals (issue 24, section 5)", "",
              "| network | goal | measured | status | detail |", "|---|---|---:|---|---|"]
    for g in result["goals"]:
        lines.append(f"| {g['network']} | {g['goal']} | {g['measured']:.2f}x | "
                     f"{'met' if g['met'] else 'not met'} | {g['detail']} |")
    lines += ["", f"(benchmark wall time {result['wall_s']:.0f} s)"]
    return lines


# ----------------------------------------------------------------------------- main


def main(argv=None) -> dict:
    args = parse_args(argv)
    set_thread_env(1)  # before numpy / JAX / ONNX Runtime are imported
    if args.cpu != -1 and hasattr(os, "sched_setaffinity"):
        args.cpu = max(os.sched_getaffinity(0)) if args.cpu == -2 else args.cpu
        os.sched_setaffinity(0, {args.cpu})
    from actorq.metrics.machine import machine_name

    start = time.perf_counter()
    networks = [measure_network(name, args) for name in args.networks]
    result = {
        "config": vars(args),
        "machine": {
            "name": machine_name(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "loadavg": os.getloadavg(),
            # below 1 when other processes took the core during the timings
            "cpu_over_wall": sum(r["cpu_ms"] for n in networks for r in n["rows"])
            / sum(r["ms"] for n in networks for r in n["rows"]),
        },
        "versions": library_versions(("jax", "onnxruntime", "onnx", "numpy")),
        "networks": networks,
        "goals": goals(networks),
        "wall_s": time.perf_counter() - start,
    }
    text = "\n".join(report_lines(result)) + "\n"
    print(text, end="")
    if args.out_dir:
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "conv_inference.md").write_text(text)
        (out / "conv_inference.json").write_text(json.dumps(result, indent=2, allow_nan=False))
        print(f"\nwrote {out / 'conv_inference.md'} and {out / 'conv_inference.json'}")
    return result


if __name__ == "__main__":
    main()
