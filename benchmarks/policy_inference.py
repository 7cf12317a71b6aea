"""Policy inference speed of the actor runtimes, with ONNX Runtime and PyTorch anchors.

    python -m benchmarks.policy_inference [--batch_sizes=1,8,64] [--hidden=2048 --layers=3]
        [--obs=24 --act=6] [--threads=1] [--repeats=11] [--iters=0] [--json_out=FILE]

For the paper policy (obs -> hidden x layers -> act, ReLU, tanh output) it times every actor
runtime (``xla``, ``onnxruntime``, ``onnxruntime_fused``) x precision (fp32, fp16, bf16, int8) x
batch size, plus anchors on the same weights:

* ``ort-dynamic``: ONNX Runtime's own dynamic int8 (``onnxruntime.quantization.quantize_dynamic``
  of an fp32 ONNX model; per-tensor asymmetric activations, not our numerics), and its two
  settings for x86 CPUs without VNNI, where the default's u8 x s8 kernel saturates:
  ``ort-dynamic-7bit`` (``reduce_range``: 7-bit weights, same kernel) and ``ort-dynamic-u8`` (u8
  weights, the exact u8 x u8 kernel). Ratios "vs ort-dynamic" are against the default;
* ``torch``: PyTorch fp32 and dynamic int8 (``torch.ao.quantization.quantize_dynamic``), what the
  QuaRL actors ran. They are only included when torch can be imported.

Each time is the median over ``--repeats`` timings of ``--iters`` calls, taken after a warm-up.
Every configuration at a batch size is timed in one interleaved round-robin, so machine-load drift
hits all of them alike; compare ratios within one run.

* ``speedup``: relative to the fastest fp32 row at that batch (any runtime or anchor), by wall
  time. ``(cpu)`` is the same ratio by process CPU time, which is steadier when other processes
  compete for the cores.
* ``max|diff|``: the max abs output difference from ``make_reference_forward`` of the same package.
  For the anchors it is measured against the fp32 package, so it includes their quantization error.
  ``onnxruntime_fused`` runs ORT's ``DynamicQuantizeMatMul`` (per-tensor asymmetric activations)
  on the package's int8 weights, so its int8 diff is a real numerics difference, not rounding
  noise; the issue's bar is 1e-2 on tanh outputs, and rows above it are flagged. Packages it does
  not fuse run the exact ``onnxruntime`` graph, so those rows are not timed twice. Random
  Gaussian inputs flatter ORT's per-tensor rounding, so the same difference is also measured at
  batch 1 on real ``--diff_task`` observations (walker_stand: features spanning ~1e-2..4e1).
* ``cpu/wall``: above 1 means the row used more than one core.

By default the process is pinned to one CPU (``--cpu``), so a runtime that uses helper threads
(XLA:CPU runs computations on its own threads and its caller spins) gets one core like the others.

Per runtime it also reports actor start-up, measured in a fresh subprocess per runtime: import,
``load`` of the paper int8 package, first call (XLA compiles there), and resident memory (RSS)
after imports and after loading. It also reports the in-process cost of loading a new policy
version of the same shape.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from actorq.bounds import (
    LAYER_SIZES,
    NON_NEGATIVE_INT,
    POSITIVE,
    POSITIVE_INT,
    Bounds,
)
from actorq.command_line import ArgumentParser, check_args, check_choices
from actorq.metrics.benchmarking import library_versions, time_round_robin
from launchpad_programs.thread_env import set_thread_env

PRECISIONS = ("fp32", "fp16", "bf16", "int8")
# Also accepted by --precisions: plain round-to-nearest with signed activations, the int8 before
# the recipe (the recipe's unsigned codes take a different ONNX Runtime kernel on AVX2).
EXTRA_PRECISIONS = ("rtn_int8",)
RUNTIMES = ("xla", "onnxruntime", "onnxruntime_fused")
# The numerics bar for int8 rows vs the reference forward (max abs diff on tanh outputs).
INT8_DIFF_BAR = 1e-2


def parse_args(argv=None) -> argparse.Namespace:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    ints = lambda s: [int(v) for v in s.split(",") if v]  # noqa: E731
    names = lambda s: [v for v in s.split(",") if v]  # noqa: E731
    p.add_argument("--batch_sizes", type=ints, default=[1, 8, 64])
    p.add_argument("--iters", type=int, default=0, help="calls per timing; 0 = auto (~--min_time)")
    p.add_argument("--min_time", type=float, default=0.05, help="seconds per timing when auto")
    p.add_argument("--repeats", type=int, default=11, help="timings per configuration (median)")
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--obs", type=int, default=24)
    p.add_argument("--act", type=int, default=6)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--cpu",
        type=int,
        default=-2,
        help="pin the process (and the start-up children) to this CPU; -2 = the last allowed CPU, "
        "-1 = do not pin. Pinning keeps runtimes that use helper threads (XLA) to one core.",
    )
    p.add_argument("--precisions", type=names, default=list(PRECISIONS))
    p.add_argument("--runtimes", type=names, default=list(RUNTIMES))
    p.add_argument("--no_anchors", action="store_true", help="skip the ORT-dynamic/torch rows")
    p.add_argument("--diff_task", default="walker_stand",
                   help="also measure batch-1 numerics on this task's real observations (when its "
                        "observation/action sizes match --obs/--act; '' to skip)")
    p.add_argument("--diff_observations", type=int, default=200)
    p.add_argument("--no_startup", action="store_true", help="skip the start-up subprocesses")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json_out", type=str, default="")
    p.add_argument("--startup_child", type=str, default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    check_args(p, args, {"batch_sizes": LAYER_SIZES, "iters": NON_NEGATIVE_INT,
                         "min_time": POSITIVE, "repeats": POSITIVE_INT, "hidden": POSITIVE_INT,
                         "layers": POSITIVE_INT, "obs": POSITIVE_INT, "act": POSITIVE_INT,
                         "threads": POSITIVE_INT, "cpu": Bounds(low=-2, integer=True),
                         "diff_observations": POSITIVE_INT, "seed": NON_NEGATIVE_INT})
    valid = PRECISIONS + EXTRA_PRECISIONS
    unknown = sorted(set(args.precisions) - set(valid))
    if unknown or not args.precisions:
        p.error(f"--precisions: unknown {unknown}; valid: {', '.join(valid)}")
    check_choices(p, args.diff_task or None, (), args.runtimes)
    return args


# ----------------------------------------------------------------------------- model + anchors


def make_params(args):
    import jax
    import numpy as np

    from actorq.networks import make_policy_network

    net = make_policy_network(args.act, (args.hidden,) * args.layers)
    params = net.init(jax.random.key(args.seed), np.zeros((1, args.obs), np.float32))
    # Flax initialises biases to zero; give them values so every runtime has to get them right.
    rng = np.random.default_rng(args.seed)
    params = jax.tree_util.tree_map_with_path(
        lambda path, leaf: (
            leaf + 0.1 * rng.standard_normal(leaf.shape).astype(np.float32)
            if "bias" in jax.tree_util.keystr(path)
            else leaf
        ),
        params,
    )
    return net, params


# ONNX Runtime's own dynamic int8 (quantize_dynamic of the fp32 model), as anchors: its default
# (s8 weights; the issue's anchor), and the two settings its docs give for x86 CPUs without VNNI,
# whose u8 x s8 kernel saturates pairs of products to int16 (actorq.runtime.onnx_runtime.
# u8s8_saturates): 7-bit weights (reduce_range) and u8 weights (the exact u8 x u8 kernel).
ORT_DYNAMIC_ANCHORS = {
    "ort-dynamic": {"weight_type": "QInt8"},
    "ort-dynamic-7bit": {"weight_type": "QInt8", "reduce_range": True},
    "ort-dynamic-u8": {"weight_type": "QUInt8"},
}


def ort_dynamic_anchor(fp32_package, threads: int, weight_type: str = "QInt8",
                       reduce_range: bool = False):
    """ONNX Runtime dynamic int8 (its own quantize_dynamic) of the fp32 model of the package."""
    import logging

    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from actorq.runtime import onnx_runtime

    logging.getLogger().setLevel(logging.ERROR)  # "consider pre-processing" warning
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        onnx.save(onnx_runtime.build_model(fp32_package), src)
        quantize_dynamic(src, dst, weight_type=QuantType[weight_type], reduce_range=reduce_range)
        session = ort.InferenceSession(
            str(dst), onnx_runtime.session_options(threads), providers=["CPUExecutionProvider"]
        )
    in_name, out_name = session.get_inputs()[0].name, session.get_outputs()[0].name
    return lambda x: session.run([out_name], {in_name: x})[0]


def torch_anchors(fp32_package, threads: int) -> dict:
    """PyTorch fp32 and dynamic int8 (torch.ao) of the fp32 package, or {} without torch."""
    try:
        import torch
    except ImportError:
        return {}
    import numpy as np

    torch.set_num_threads(threads)
    with contextlib.suppress(RuntimeError):  # already set in this process
        torch.set_num_interop_threads(1)
    modules = []
    for i, layer in enumerate(fp32_package.layers):
        linear = torch.nn.Linear(*layer.kernel.shape)
        with torch.no_grad():  # np.array: writable copies (package arrays may be read-only)
            linear.weight.copy_(torch.from_numpy(np.array(layer.kernel.T)))
            linear.bias.copy_(torch.from_numpy(np.array(layer.bias)))
        modules.append(linear)
        last = i == len(fp32_package.layers) - 1
        modules.append(torch.nn.Tanh() if last else torch.nn.ReLU())
    fp32 = torch.nn.Sequential(*modules).eval()
    with warnings.catch_warnings():  # torch.ao.quantization is deprecated in favour of torchao
        warnings.simplefilter("ignore")
        int8 = torch.ao.quantization.quantize_dynamic(fp32, {torch.nn.Linear}, dtype=torch.qint8)

    def runner(model):
        def run(x):
            with torch.inference_mode():
                return model(torch.from_numpy(x)).numpy()

        return run

    return {("torch", "fp32"): runner(fp32), ("torch", "int8-dynamic"): runner(int8)}


# ----------------------------------------------------------------------------- start-up


STARTUP_CHILD = """
import os, sys, time, json, resource
import psutil
proc = psutil.Process()
rss0 = proc.memory_info().rss
t0 = time.perf_counter()
data = open(sys.argv[2], "rb").read()
kind = sys.argv[1]
import numpy as np
if kind == "torch-int8-dynamic":
    import torch
    torch.set_num_threads(1)
    from actorq.quantization.package import PolicyPackage
    pkg = PolicyPackage.from_bytes(data)
    t1 = time.perf_counter(); rss1 = proc.memory_info().rss
    sys.argv = sys.argv[:1]
    from benchmarks.policy_inference import torch_anchors
    run = torch_anchors(pkg, 1)[("torch", "int8-dynamic")]
    t2 = time.perf_counter()
else:
    from actorq.quantization.package import PolicyPackage
    from actorq.runtime.policy_runtime import make_policy_runtime
    runtime = make_policy_runtime(kind)
    pkg = PolicyPackage.from_bytes(data)
    t1 = time.perf_counter(); rss1 = proc.memory_info().rss
    runtime.load(pkg)
    run = runtime
    t2 = time.perf_counter()
run(np.zeros((1, pkg.input_size), np.float32))
t3 = time.perf_counter()
rss3 = proc.memory_info().rss
print(json.dumps({
    "import_s": t1 - t0, "load_s": t2 - t1, "first_call_s": t3 - t2, "total_s": t3 - t0,
    "rss_imports_mb": (rss1 - rss0) / 2**20, "rss_model_mb": (rss3 - rss1) / 2**20,
    "rss_total_mb": rss3 / 2**20,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def measure_startup(kinds, package_bytes: bytes) -> dict:
    """Fresh interpreter per runtime: import + load + first call, and resident memory."""
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "policy.aqpk"
        path.write_bytes(package_bytes)
        env = dict(os.environ)  # carries this process's XLA_FLAGS / *_NUM_THREADS
        for kind in kinds:
            proc = subprocess.run(
                [sys.executable, "-c", STARTUP_CHILD, kind, str(path)],
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
                cwd=Path(__file__).resolve().parents[1],
            )
            if proc.returncode != 0:
                results[kind] = {"error": proc.stderr.strip().splitlines()[-1:]}
                continue
            results[kind] = json.loads(proc.stdout.strip().splitlines()[-1])
    return results


# ----------------------------------------------------------------------------- main


def main(argv=None) -> dict:
    args = parse_args(argv)
    set_thread_env(args.threads)
    if args.cpu != -1 and hasattr(os, "sched_setaffinity"):
        args.cpu = max(os.sched_getaffinity(0)) if args.cpu == -2 else args.cpu
        os.sched_setaffinity(0, {args.cpu})
    import jax
    import numpy as np

    import actorq.quantization as q
    from actorq.runtime.policy_runtime import make_policy_runtime

    t_start = time.perf_counter()
    net, params = make_params(args)
    calibration = calibration_observations(args)

    def quantizer(spec: str):
        # Calibrated as a learner calibrates its actors' packages (the int8 recipe's smoothing
        # and bias correction), on observations of other seeds than the numerics check's.
        made = q.make_quantizer(spec)
        return made.with_calibration(calibration) if hasattr(made, "with_calibration") else made

    packages = {spec: quantizer(spec).quantize(params, net, version=1)
                for spec in args.precisions}
    fp32_package = packages.get("fp32") or q.make_quantizer("fp32").quantize(params, net, 1)
    references = {spec: q.make_reference_forward(pkg) for spec, pkg in packages.items()}
    fp32_reference = references.get("fp32") or q.make_reference_forward(fp32_package)

    calls, reference_of = {}, {}
    runtimes = {}
    notes = []
    for name in args.runtimes:
        for spec, package in packages.items():
            runtime = make_policy_runtime(name)
            if hasattr(runtime, "threads"):
                runtime.threads = args.threads
            runtime.load(package)
            if getattr(runtime, "graph_kind", None) == "exact" and name != "onnxruntime":
                # e.g. onnxruntime_fused on a float package: the onnxruntime graph, unchanged
                notes.append(f"{name} {spec}: runs the exact onnxruntime graph (not timed)")
                continue
            runtimes[(name, spec)] = runtime
            calls[(name, spec)] = runtime
            reference_of[(name, spec)] = (references[spec], "same pkg")
    anchors = {}  # ORT's own dynamic int8 models, by name
    if not args.no_anchors:
        for anchor, settings in ORT_DYNAMIC_ANCHORS.items():
            anchors[anchor] = ort_dynamic_anchor(fp32_package, args.threads, **settings)
            calls[(anchor, "int8-dynamic")] = anchors[anchor]
            reference_of[(anchor, "int8-dynamic")] = (fp32_reference, "fp32 pkg")
        torch_calls = torch_anchors(fp32_package, args.threads)
        if not torch_calls:
            notes.append("torch not importable: PyTorch anchor rows skipped")
        for key, fn in torch_calls.items():
            calls[key] = fn
            reference_of[key] = (fp32_reference, "fp32 pkg")

    rows = []
    rng = np.random.default_rng(args.seed + 1)
    for batch in args.batch_sizes:
        x = rng.standard_normal((batch, args.obs)).astype(np.float32)
        timings = time_round_robin(calls, x, args.repeats, args.iters, args.min_time)
        fp32_rows = {k: v["ms"] for k, v in timings.items() if k[1] == "fp32"}
        baseline_key = min(fp32_rows, key=fp32_rows.get) if fp32_rows else None
        fp32_cpu = min((v["cpu_ms"] for k, v in timings.items() if k[1] == "fp32"), default=None)
        for key, timing in timings.items():
            reference, ref_kind = reference_of[key]
            diff = float(np.abs(np.asarray(calls[key](x)) - reference(x)).max())
            rows.append(
                {
                    "runtime": key[0],
                    "precision": key[1],
                    "batch": batch,
                    **timing,
                    "speedup_vs_fastest_fp32": fp32_rows[baseline_key] / timing["ms"]
                    if baseline_key
                    else None,
                    "baseline": "/".join(baseline_key) if baseline_key else None,
                    "cpu_speedup_vs_fastest_fp32": fp32_cpu / timing["cpu_ms"]
                    if fp32_cpu
                    else None,
                    "max_abs_diff": diff,
                    "diff_vs": ref_kind,
                }
            )

    task_diffs = task_numerics(args, runtimes, references, anchors, fp32_reference)

    # New policy version, same shape: what an actor pays on every pull.
    reload = {}
    for (name, spec), runtime in runtimes.items():
        if spec != "int8":
            continue
        new_version = quantizer(spec).quantize(params, net, version=2)
        times = []
        for _ in range(5):
            start = time.perf_counter()
            runtime.load(new_version)
            times.append(time.perf_counter() - start)
        reload[name] = float(np.median(times))

    startup = {}
    if not args.no_startup and "int8" in packages:
        kinds = list(args.runtimes)
        if not args.no_anchors and any(k[0] == "torch" for k in calls):
            kinds.append("torch-int8-dynamic")
        startup = measure_startup(kinds, packages["int8"].to_bytes())

    result = {
        "config": {
            **{k: v for k, v in vars(args).items() if k != "startup_child"},
            "policy": f"{args.obs} -> {args.hidden}x{args.layers} -> {args.act} (relu, tanh)",
        },
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "jax": jax.__version__,
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "loadavg": os.getloadavg(),
        },
        "versions": library_versions(),
        "rows": rows,
        "reload_same_shape_s": reload,
        "task_numerics": task_diffs,
        "startup": startup,
        "notes": notes,
        "wall_s": time.perf_counter() - t_start,
    }
    result["int8_summary"] = int8_summary(result)
    print_report(result)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2))
        print(f"\nwrote {args.json_out}")
    return result


def calibration_observations(args):
    """256 ``--diff_task`` observations (seed + 1), or standard normal ones where the task
    does not fit the policy: what the int8 recipe calibrates on."""
    import numpy as np

    if args.diff_task:
        obs = task_observations(args.diff_task, 256, args.seed + 1)
        if obs.shape[1] == args.obs:
            return obs
    return np.random.default_rng(args.seed + 1).normal(size=(256, args.obs)).astype(np.float32)


def task_observations(task: str, n: int, seed: int):
    """``n`` observations of ``task`` under uniform random actions (varied states and scales)."""
    import numpy as np

    from actorq.envs import make_environment

    env = make_environment(task, seed=seed)
    spec = env.action_spec()
    rng = np.random.default_rng(seed)
    rows, timestep = [], env.reset()
    while len(rows) < n:
        rows.append(np.asarray(timestep.observation, np.float32).reshape(-1))
        action = rng.uniform(spec.minimum, spec.maximum, spec.shape).astype(spec.dtype)
        timestep = env.step(action)
        if timestep.last():
            timestep = env.reset()
    return np.stack(rows)


def task_numerics(args, runtimes: dict, references: dict, anchors: dict | None = None,
                  fp32_reference=None) -> dict:
    """Max / median abs difference from the reference forward, one observation per call (as an
    actor calls), on real ``--diff_task`` observations, for each integer runtime row; plus, for
    scale, the reference int8's own distance from fp32 on the same observations and each of
    ``anchors``' (name -> callable: ORT's own int8 of the fp32 model) distance from
    ``fp32_reference``."""
    import numpy as np

    if not args.diff_task or args.diff_observations < 1:
        return {}
    obs = task_observations(args.diff_task, args.diff_observations, args.seed + 2)
    if obs.shape[1] != args.obs:
        return {"note": f"{args.diff_task} observations have {obs.shape[1]} features, the policy "
                        f"takes {args.obs}: skipped"}
    result: dict = {"task": args.diff_task, "observations": len(obs), "rows": {}}
    for (name, spec), runtime in runtimes.items():
        if not spec.startswith("int"):
            continue
        out = np.concatenate([runtime(row[None]) for row in obs])
        gap = np.abs(out - np.asarray(references[spec](obs))).max(axis=1)
        result["rows"][f"{name}/{spec}"] = {"max": float(gap.max()),
                                            "median": float(np.median(gap))}
    if "int8" in references and "fp32" in references:
        gap = np.abs(np.asarray(references["int8"](obs)) - np.asarray(references["fp32"](obs)))
        result["reference_int8_vs_fp32"] = {"max": float(gap.max(axis=1).max()),
                                            "median": float(np.median(gap.max(axis=1)))}
    if anchors and fp32_reference is not None:
        fp32_out = np.asarray(fp32_reference(obs))
        result["anchors_vs_fp32"] = {}
        for name, anchor in anchors.items():
            out = np.concatenate([anchor(row[None]) for row in obs])
            gap = np.abs(out - fp32_out).max(axis=1)
            result["anchors_vs_fp32"][name] = {"max": float(gap.max()),
                                               "median": float(np.median(gap))}
    return result


def print_task_numerics(numerics: dict) -> None:
    if not numerics:
        return
    if "note" in numerics:
        print(f"\nnote: {numerics['note']}")
        return
    print(f"\nbatch-1 numerics on {numerics['observations']} real {numerics['task']} observations "
          f"(max / median over observations of max|diff| vs the reference forward; bar "
          f"{INT8_DIFF_BAR:g}):")
    for key, gap in numerics["rows"].items():
        flag = "ok" if gap["max"] < INT8_DIFF_BAR else "ABOVE BAR"
        print(f"  {key:<24} {gap['max']:.1e} / {gap['median']:.1e}  {flag}")
    if "reference_int8_vs_fp32" in numerics:
        gap = numerics["reference_int8_vs_fp32"]
        print(f"  {'(reference int8 vs fp32)':<24} {gap['max']:.1e} / {gap['median']:.1e}")
    for name, gap in numerics.get("anchors_vs_fp32", {}).items():
        print(f"  {'(' + name + ' vs fp32)':<28} {gap['max']:.1e} / {gap['median']:.1e}")


def int8_summary(result: dict) -> list[dict]:
    """Per batch and int8 row: time vs the fastest fp32 row and vs ORT's own dynamic int8."""
    summary = []
    for batch in result["config"]["batch_sizes"]:
        rows = [r for r in result["rows"] if r["batch"] == batch]
        anchor = next((r for r in rows if r["runtime"] == "ort-dynamic"), None)
        for r in rows:
            if r["precision"] not in ("int8", "int8-dynamic"):
                continue
            ours = r["diff_vs"] == "same pkg"
            summary.append(
                {
                    "batch": batch,
                    "runtime": r["runtime"],
                    "precision": r["precision"],
                    "ms": r["ms"],
                    "speedup_vs_fastest_fp32": r["speedup_vs_fastest_fp32"],
                    "cpu_speedup_vs_fastest_fp32": r["cpu_speedup_vs_fastest_fp32"],
                    "vs_ort_dynamic": anchor["ms"] / r["ms"] if anchor else None,
                    "cpu_vs_ort_dynamic": anchor["cpu_ms"] / r["cpu_ms"] if anchor else None,
                    "max_abs_diff": r["max_abs_diff"],
                    "within_bar": r["max_abs_diff"] < INT8_DIFF_BAR if ours else None,
                }
            )
    return summary


def print_int8_summary(result: dict) -> None:
    summary = result.get("int8_summary") or int8_summary(result)
    if not summary:
        return
    print(
        "\nint8 rows: speedup vs the fastest fp32 row and vs ORT's own dynamic int8 "
        f"(> 1 = faster; wall, (cpu)); max|diff| vs the reference int8 forward (bar "
        f"{INT8_DIFF_BAR:g}):"
    )
    fmt = lambda v: "-" if v is None else f"{v:.2f}x"  # noqa: E731
    for s in summary:
        bar = {None: "vs fp32 pkg", True: "ok", False: "ABOVE BAR"}[s["within_bar"]]
        print(
            f"  batch {s['batch']:>3} {s['runtime']:<18} {s['ms']:8.3f} ms  vs fp32 "
            f"{fmt(s['speedup_vs_fastest_fp32']):>7} ({fmt(s['cpu_speedup_vs_fastest_fp32'])})"
            f"  vs ort-dynamic {fmt(s['vs_ort_dynamic']):>6} ({fmt(s['cpu_vs_ort_dynamic'])})"
            f"  max|diff| {s['max_abs_diff']:.1e} {bar}"
        )


def print_report(result: dict) -> None:
    cfg = result["config"]
    pinned = f"pinned to CPU {cfg['cpu']}" if cfg["cpu"] >= 0 else "not pinned"
    print(
        f"policy {cfg['policy']}, threads={cfg['threads']}, {pinned}, "
        f"median of {cfg['repeats']} timings; "
        f"loadavg {result['machine']['loadavg'][0]:.1f} on {result['machine']['cpu_count']} CPUs"
    )
    header = (
        f"{'runtime':<17} {'precision':<13} {'batch':>5} {'ms/call':>9} {'cpu ms':>8} "
        f"{'cpu/wall':>8} {'speedup':>8} {'(cpu)':>7} {'max|diff|':>9}  diff vs"
    )
    print(header)
    print("-" * len(header))
    for batch in cfg["batch_sizes"]:
        batch_rows = [r for r in result["rows"] if r["batch"] == batch]
        for r in sorted(batch_rows, key=lambda r: r["ms"]):
            speedup = f"{r['speedup_vs_fastest_fp32']:.2f}x" if r["baseline"] else "-"
            cpu_speedup = r["cpu_speedup_vs_fastest_fp32"]
            cpu_speedup = f"{cpu_speedup:.2f}x" if cpu_speedup else "-"
            print(
                f"{r['runtime']:<17} {r['precision']:<13} {r['batch']:>5} {r['ms']:>9.3f} "
                f"{r['cpu_ms']:>8.3f} {r['cpu_ms'] / r['ms']:>8.2f} {speedup:>8} {cpu_speedup:>7} "
                f"{r['max_abs_diff']:>9.1e}  {r['diff_vs']}"
            )
        if batch_rows and batch_rows[0]["baseline"]:
            print(f"  (batch {batch}: speedup vs fastest fp32 = {batch_rows[0]['baseline']})")
    print_int8_summary(result)
    print_task_numerics(result.get("task_numerics", {}))
    if result["reload_same_shape_s"]:
        print("\nload of a new int8 policy version (same shape), median of 5:")
        for name, seconds in result["reload_same_shape_s"].items():
            print(f"  {name:<17} {seconds * 1e3:8.2f} ms")
    if result["startup"]:
        print(
            "\nactor start-up, fresh process, the int8 package (import / load / first call;"
            " RSS after imports / added by the model / total):"
        )
        for kind, s in result["startup"].items():
            if "error" in s:
                print(f"  {kind:<20} failed: {s['error']}")
                continue
            print(
                f"  {kind:<20} {s['import_s']:6.2f} s / {s['load_s']:6.3f} s / "
                f"{s['first_call_s']:6.3f} s = {s['total_s']:6.2f} s;  RSS "
                f"{s['rss_imports_mb']:6.0f} / {s['rss_model_mb']:5.0f} / "
                f"{s['rss_total_mb']:5.0f} MB"
            )
    for note in result["notes"]:
        print(f"note: {note}")
    print(f"\n(benchmark wall time {result['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()
