"""Actor policy runtimes (xla, onnxruntime, onnxruntime_fused): reference numerics, fast paths,
loading, registry."""

from __future__ import annotations

import dataclasses
import functools
import re
import subprocess
import sys

import jax
import numpy as np
import onnx
import pytest

import actorq.quantization as q
from actorq.networks import PAPER_POLICY_SIZES, make_policy_network
from actorq.runtime.policy_runtime import XlaRuntime, available_runtimes, make_policy_runtime

OBS, ACT = 24, 6
SMALL = (64, 64)
RUNTIMES = ("xla", "onnxruntime")  # the runtimes with the reference numerics
FUSED = "onnxruntime_fused"  # ORT's per-tensor activation quantization on our int8 weights
QUANTIZERS = ("fp32", "fp16", "bf16", "int8", "int4", "fp32in_int8", "fp32head_int8",
              "uact_int8", "uact_int4", "fp32head_uact_int8")
# Max abs difference vs the reference forward on tanh outputs. Float runtimes differ only by
# summation order. Integer ones share the integers, but an ulp of difference in a float scale can
# move a value across a rounding boundary, and that flip propagates (seen: ~1e-7 typical, ~2e-3
# worst on 64-wide layers).
TOLERANCE = {"fp32": 1e-5, "fp16": 1e-5, "bf16": 1e-5, "int8": 1e-2, "int4": 1e-2,
             "fp32in_int8": 1e-2, "fp32head_int8": 1e-2, "uact_int8": 1e-2, "uact_int4": 1e-2,
             "fp32head_uact_int8": 1e-2}


@functools.cache
def _params(hidden: tuple[int, ...], seed: int, bias_std: float = 0.5):
    """Policy params with *non-zero* biases (Flax initialises biases to 0, which would hide any
    runtime that mishandles them)."""
    net = make_policy_network(ACT, hidden)
    params = net.init(jax.random.key(seed), np.zeros((1, OBS), np.float32))
    rng = np.random.default_rng(seed)

    def perturb(path, leaf):
        if "bias" in jax.tree_util.keystr(path):
            return leaf + bias_std * rng.standard_normal(leaf.shape).astype(np.float32)
        return leaf

    return net, jax.tree_util.tree_map_with_path(perturb, params)


@functools.cache
def make_package(
    spec: str, hidden: tuple[int, ...] = SMALL, seed: int = 0, bias_std: float = 0.5
) -> q.PolicyPackage:
    net, params = _params(tuple(hidden), seed, bias_std)
    return q.make_quantizer(spec).quantize(params, net, version=seed)


@functools.cache
def reference(spec: str, hidden: tuple[int, ...] = SMALL, seed: int = 0, bias_std: float = 0.5):
    """The jitted reference forward (cached so its compilations are shared between tests)."""
    return q.make_reference_forward(make_package(spec, hidden, seed, bias_std))


def observations(batch: int, seed: int = 1) -> np.ndarray:
    """Rows spanning four orders of magnitude (per-row activation scales differ a lot)."""
    rng = np.random.default_rng(seed)
    scales = np.logspace(-2, 2, batch, dtype=np.float32)[:, None] if batch > 1 else 1.0
    return (rng.standard_normal((batch, OBS)) * scales).astype(np.float32)


@pytest.mark.parametrize("spec", QUANTIZERS)
@pytest.mark.parametrize("runtime_name", RUNTIMES)
def test_runtime_matches_reference_forward(runtime_name, spec):
    package = make_package(spec)
    runtime = make_policy_runtime(runtime_name)
    assert runtime.name == runtime_name
    runtime.load(package)
    for batch in (1, 2, 8):
        obs = observations(batch)
        if batch == 8:
            obs[3] = 0.0  # an all-zero row: the zero -> 1 scale rule
        out = runtime(obs)
        assert out.shape == (batch, ACT) and out.dtype == np.float32
        diff = np.abs(out - reference(spec)(obs))
        assert diff.max() < TOLERANCE[spec], (runtime_name, spec, batch, diff.max())
        assert np.median(diff) < 1e-5, (runtime_name, spec, batch, np.median(diff))


@pytest.mark.parametrize("runtime_name", RUNTIMES)
def test_int8_dead_relu_layer_matches_reference(runtime_name):
    """A hidden layer whose ReLU output is all zero: the folded ReLU + zero-row path in ORT."""
    package = make_package("int8")
    first = package.layers[0]
    dead = q.DenseParams(first.kernel, np.full_like(first.bias, -1e4), first.kernel_scale)
    package = dataclasses.replace(package, layers=(dead, *package.layers[1:]))
    runtime = make_policy_runtime(runtime_name)
    runtime.load(package)
    obs = observations(2)
    out = runtime(obs)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, q.make_reference_forward(package)(obs), atol=1e-6)


def test_onnx_int8_graph_runs_u8_kernels_and_keeps_bias_out_of_the_fused_matmul(tmp_path):
    """ORT must run MatMulIntegerToFloat on uint8 activations with a scalar kernel scale, and no
    node may carry a bias.

    ORT 1.32's MatMulIntegerToFloat computes ``a_scale * (acc * b_scale + bias)`` for a per-row
    ``a_scale``, which scales the bias. Its optimiser builds exactly that node out of
    MatMulInteger -> Cast -> Mul -> Add, so a graph that lets this fusion happen gets wrong outputs.
    """
    import onnxruntime as ort

    from actorq.runtime import onnx_runtime

    runtime = make_policy_runtime("onnxruntime")
    package = make_package("int8")
    runtime.load(package)
    model, weights = onnx_runtime.build_graph(package)
    options = onnx_runtime.session_options()
    path = tmp_path / "optimized.onnx"
    options.optimized_model_filepath = str(path)
    names = list(weights)
    values = [ort.OrtValue.ortvalue_from_numpy(weights[name]) for name in names]
    options.add_external_initializers(names, values)
    ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    optimized = onnx.load(str(path), load_external_data=False)
    ops = [node.op_type for node in optimized.graph.node]
    assert ops.count("MatMulIntegerToFloat") == len(package.layers), ops
    assert "MatMulInteger" not in ops and "Round" not in ops
    for node in optimized.graph.node:
        if node.op_type == "MatMulIntegerToFloat":
            assert len(node.input) < 7 or not node.input[6], f"bias fused into {node.name}"
    producers = {node.output[0]: node for node in optimized.graph.node}
    init = {t.name: t for t in optimized.graph.initializer}
    for node in optimized.graph.node:
        if node.op_type != "MatMulIntegerToFloat":
            continue
        # b_scale is a scalar (the per-channel scale follows in a Mul): ORT's per-column output
        # path was the slower one (Milan, docs/performance.md)
        assert list(init[node.input[3]].dims) in ([], [1]), node.name
        clip = producers[node.input[0]]  # uint8 clip <- QuantizeLinear(., 1, uint8 zero point)
        quantize = producers[clip.input[0]]
        assert (clip.op_type, quantize.op_type) == ("Clip", "QuantizeLinear")
        assert init[quantize.input[2]].data_type == onnx.TensorProto.UINT8
    # batch 1 runs unpadded and batch is a free dimension
    assert runtime.session.get_inputs()[0].shape[0] == "batch"
    assert runtime(observations(1)).shape == (1, ACT)


def _random_int8_package(sizes: tuple[int, ...]) -> q.PolicyPackage:
    rng = np.random.default_rng(0)
    layers = tuple(
        q.DenseParams(
            rng.integers(-127, 128, (n_in, n_out), dtype=np.int8),
            rng.standard_normal(n_out).astype(np.float32),
            rng.uniform(1e-3, 1e-2, n_out).astype(np.float32),
        )
        for n_in, n_out in zip(sizes[:-1], sizes[1:])
    )
    return q.PolicyPackage("int8", 0, layers, "relu", "tanh", activation_bits=8)


def _hlo_types(text: str) -> dict[str, str]:
    """Instruction name -> element type, from an HLO module's text."""
    return dict(re.findall(r"%([\w.\-]+) = ([a-z]+\d*)\[", text))


def _dots(text: str) -> list[tuple[str, list[str]]]:
    """(result type, operand types) of every ``dot(`` in an HLO module's text."""
    types = _hlo_types(text)
    found = []
    for result, operands in re.findall(r"= ([a-z]+\d*)\[[^\]]*\]\S* dot\(([^)]*)\)", text):
        names = re.findall(r"%([\w.\-]+)", operands)
        found.append((result, [types.get(name, "?") for name in names]))
    return found


def test_xla_batch1_int8_call_avoids_the_slow_matrix_vector_path():
    """What XLA:CPU emits for the paper policy at 1 row vs 2 rows, and that batch 1 is padded.

    At 1 row the s8 kernels are converted to s32 (``s32[K,N] convert(param)``) and multiplied by
    a plain s32 ``dot``: the ~13x slow path. From 2 rows up every dot has s8 x s8 -> s32 operands
    (inside XLA's YNNPACK fusion). ``XlaRuntime`` pads batch 1 to 2 rows to get the fast path.
    """
    package = _random_int8_package((OBS, *PAPER_POLICY_SIZES, ACT))  # values do not matter here
    runtime = XlaRuntime()
    runtime.load(package)
    assert runtime.padded_rows(1) == 2
    fast = runtime.lower(1).compile().as_text()
    fast_dots = _dots(fast)
    assert len(fast_dots) == len(package.layers), fast_dots
    assert all(res == "s32" and ops == ["s8", "s8"] for res, ops in fast_dots), fast_dots
    assert not re.search(r"s32\[\d+,\d+\]\{1,0\} convert\(%param", fast)

    runtime.MIN_INT_ROWS = 1  # what the runtime would run without padding
    slow = runtime.lower(1).compile().as_text()
    slow_dots = _dots(slow)
    if slow_dots and all(ops == ["s8", "s8"] for _, ops in slow_dots):
        # Not a failure of ours: XLA improved. The padding is then no longer needed.
        pytest.skip("this XLA lowers the batch-1 int8 dot to s8 x s8 itself: "
                    "XlaRuntime's 2-row padding can go (benchmarks/policy_inference.py)")
    assert slow_dots and all(ops == ["s32", "s32"] for _, ops in slow_dots), slow_dots
    kernel_converts = re.findall(r"s32\[(\d+),(\d+)\]\{1,0\} convert\(%param", slow)
    assert ("2048", "2048") in kernel_converts, kernel_converts


def test_unknown_runtime_raises_listing_valid_names():
    assert {"xla", "onnxruntime", FUSED} <= set(available_runtimes())
    with pytest.raises(ValueError, match="unknown actor runtime") as info:
        make_policy_runtime("tensorrt")
    assert "xla" in str(info.value) and "onnxruntime" in str(info.value)


@pytest.mark.parametrize("runtime_name", (*RUNTIMES, FUSED))
def test_call_before_load_raises(runtime_name):
    runtime = make_policy_runtime(runtime_name)
    with pytest.raises(RuntimeError, match="no policy package loaded"):
        runtime(observations(1))


@pytest.mark.parametrize("runtime_name", RUNTIMES)
def test_load_new_version_and_new_shape(runtime_name):
    runtime = make_policy_runtime(runtime_name)
    obs = observations(2)
    for spec, hidden, seed in (
        ("int8", SMALL, 0),
        ("int8", SMALL, 1),  # new version, same network: weights swap
        ("int8", (64,), 2),  # different network: rebuild
        ("fp32", (64,), 2),  # different dtype: rebuild
    ):
        runtime.load(make_package(spec, hidden, seed))
        np.testing.assert_allclose(runtime(obs), reference(spec, hidden, seed)(obs), atol=1e-2)
    if runtime_name == "onnxruntime":
        assert runtime.graph_builds == 3  # the same-shape version reused the graph
        assert runtime.last_load_seconds > 0


def test_onnxruntime_is_registered_lazily():
    """``make_policy_runtime('onnxruntime')`` works after importing only policy_runtime."""
    code = (
        "import sys\n"
        "import actorq.runtime.policy_runtime as p\n"
        "assert 'onnxruntime' in p.available_runtimes()\n"
        "assert 'actorq.runtime.onnx_runtime' not in sys.modules\n"
        "r = p.make_policy_runtime('onnxruntime')\n"
        "assert type(r).__name__ == 'OnnxRuntime' and r.name == 'onnxruntime'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_onnxruntime_fused_is_registered_lazily():
    code = (
        "import sys\n"
        "import actorq.runtime.policy_runtime as p\n"
        "assert 'onnxruntime_fused' in p.available_runtimes()\n"
        "assert 'actorq.runtime.onnx_runtime' not in sys.modules\n"
        "r = p.make_policy_runtime('onnxruntime_fused')\n"
        "assert type(r).__name__ == 'FusedOnnxRuntime' and r.name == 'onnxruntime_fused'\n"
        "assert p.make_policy_runtime('onnxruntime').name == 'onnxruntime'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ----------------------------------------------------------------------------- onnxruntime_fused
# ORT's DynamicQuantizeMatMul on the package's int8 weights: activations are quantized per tensor
# (asymmetric uint8) instead of per row (symmetric), so it is close to, not equal to, the
# reference. The bar: max abs difference below 1e-2 on tanh outputs.
FUSED_BAR = 1e-2


def gaussian_observations(batch: int, seed: int = 1) -> np.ndarray:
    """Realistic observations: one scale for every row (unlike :func:`observations`)."""
    return np.random.default_rng(seed).standard_normal((batch, OBS)).astype(np.float32)


def test_fused_runtime_is_close_to_the_reference_on_the_paper_policy(record_property):
    """Paper policy (24 -> 2048x3 -> 6, tanh), trained-like biases N(0, 0.1), Gaussian rows.

    Measured (seeds 0-2): ~1e-3 at batch 1, ~2e-3 at batch 8, 2-4e-3 at batch 64.
    """
    from actorq.runtime import onnx_runtime

    args = ("int8", PAPER_POLICY_SIZES, 0, 0.1)
    package = make_package(*args)
    runtime = make_policy_runtime(FUSED)
    runtime.load(package)
    assert runtime.graph_kind == "fused"
    diffs = {}
    for batch in (1, 8, 64):
        obs = gaussian_observations(batch, seed=batch)
        out = runtime(obs)
        assert out.shape == (batch, ACT) and out.dtype == np.float32
        diffs[batch] = float(np.abs(out - reference(*args)(obs)).max())
        # It computes exactly ORT's numerics on our weights, bias included.
        twin = onnx_runtime.fused_forward_np(package, obs)
        np.testing.assert_allclose(out, twin, rtol=0, atol=1e-5)
    record_property("fused_max_abs_diff_vs_reference", diffs)
    print(f"\nonnxruntime_fused vs reference, paper policy: {diffs}")
    assert diffs[1] < FUSED_BAR, diffs
    assert diffs[8] < FUSED_BAR and diffs[64] < FUSED_BAR, diffs  # measured 2-4e-3


@functools.cache
def walker_observations(n: int = 150, seed: int = 3) -> np.ndarray:
    """Real walker_stand observations under random actions: varied poses and velocities, so
    the features of one row span ~1e-2..4e1 (unlike :func:`gaussian_observations`)."""
    from benchmarks.policy_inference import task_observations

    return task_observations("walker_stand", n, seed)


def _batch_1_outputs(runtime_name: str, package: q.PolicyPackage, obs: np.ndarray) -> np.ndarray:
    """One call per observation, as an actor calls its runtime."""
    runtime = make_policy_runtime(runtime_name)
    runtime.load(package)
    return np.concatenate([runtime(row[None]) for row in obs])


@pytest.mark.parametrize("runtime_name", RUNTIMES)
def test_exact_runtimes_at_batch_1_match_the_reference_on_real_walker_observations(runtime_name):
    args = ("int8", PAPER_POLICY_SIZES, 0, 0.1)
    obs = walker_observations()
    out = _batch_1_outputs(runtime_name, make_package(*args), obs)
    assert np.abs(out - np.asarray(reference(*args)(obs))).max() < TOLERANCE["int8"]


def test_fused_runtime_on_real_walker_observations_is_a_different_int8_policy(record_property):
    """Measured: on real walker observations the fused runtime is ~1.5e-2 from the reference at
    batch 1 (median ~3e-3), above the 1e-2 bar, which is why it is not the default. It is as far
    from the reference as the reference int8 policy is from fp32: another int8 rounding of the
    same network, not a broken one."""
    args = ("int8", PAPER_POLICY_SIZES, 0, 0.1)
    obs = walker_observations()
    reference_int8 = np.asarray(reference(*args)(obs))
    fp32 = np.asarray(reference("fp32", *args[1:])(obs))
    fused = _batch_1_outputs(FUSED, make_package(*args), obs)
    fused_gap = float(np.abs(fused - reference_int8).max())
    int8_gap = float(np.abs(reference_int8 - fp32).max())
    record_property("fused_vs_reference_int8", fused_gap)
    record_property("reference_int8_vs_fp32", int8_gap)
    print(f"\nbatch 1, walker observations: fused vs reference int8 {fused_gap:.1e}, "
          f"reference int8 vs fp32 {int8_gap:.1e}")
    assert fused_gap < 2 * int8_gap
    assert float(np.abs(fused - fp32).max()) < 2 * int8_gap


def test_fused_runtime_is_not_the_reference_for_rows_of_very_different_scales():
    """One scale per batch: rows 1e4x apart in magnitude lose the reference's per-row precision.
    The runtime still computes ORT's numerics exactly (the twin); the reference gap is large."""
    from actorq.runtime import onnx_runtime

    package = make_package("int8")
    runtime = make_policy_runtime(FUSED)
    runtime.load(package)
    obs = observations(8)  # rows scaled 1e-2 .. 1e2
    out = runtime(obs)
    np.testing.assert_allclose(out, onnx_runtime.fused_forward_np(package, obs), atol=1e-5)
    assert np.abs(out - reference("int8")(obs)).max() > FUSED_BAR  # documented, not hidden


def _with_output(package: q.PolicyPackage, bias_scale: float, output_activation="none"):
    last = package.layers[-1]
    rng = np.random.default_rng(7)
    bias = (bias_scale * rng.standard_normal(last.bias.shape)).astype(np.float32)
    layers = (*package.layers[:-1], q.DenseParams(last.kernel, bias, last.kernel_scale))
    return dataclasses.replace(package, layers=layers, output_activation=output_activation)


def test_fused_bias_is_added_once_and_unscaled():
    """Guards against the MatMulIntegerToFloat bug class: ORT 1.32's fused int8 matmul with a
    per-row activation scale computes ``a_scale * (acc * b_scale + bias)``.

    The last layer's input does not depend on its bias, so with a linear output, changing only
    that bias must shift the outputs by exactly the bias (not ``a_scale * bias``). All hidden
    biases are non-zero too, and the whole output must equal the NumPy twin of ORT's numerics.
    """
    from actorq.runtime import onnx_runtime

    base = make_package("int8", SMALL, 3, 1.0)  # hidden biases N(0, 1)
    with_bias, no_bias = _with_output(base, 2.0), _with_output(base, 0.0)
    assert np.abs(with_bias.layers[-1].bias).min() > 0
    fused, zero = make_policy_runtime(FUSED), make_policy_runtime(FUSED)
    fused.load(with_bias)
    zero.load(no_bias)
    assert fused.graph_kind == zero.graph_kind == "fused"
    for batch in (1, 8, 64):
        obs = gaussian_observations(batch)
        out = fused(obs)
        np.testing.assert_allclose(
            out - zero(obs),
            np.broadcast_to(with_bias.layers[-1].bias, out.shape),
            rtol=0,
            atol=1e-5,
        )
        np.testing.assert_allclose(out, onnx_runtime.fused_forward_np(with_bias, obs), atol=1e-5)
        # and it is close to the reference with these biases too (linear outputs, so compare
        # relative to the output range)
        ref = q.make_reference_forward(with_bias)(obs)
        assert np.abs(out - ref).max() < 2e-2 * np.abs(ref).max(), batch


def test_fused_graph_is_one_dynamic_quantize_matmul_per_layer_with_its_bias(tmp_path):
    """What ORT runs per integer layer: DynamicQuantizeMatMul(x, int8 kernel, scalar 1, int8 zero
    point 0, bias / kernel_scale) -> Mul(kernel_scale [N]) -> activation. No per-row quantization
    nodes; the per-column scale is a Mul (ORT's per-column b_scale path is slower)."""
    import onnxruntime as ort

    from actorq.runtime import onnx_runtime

    package = make_package("int8")
    model, weights = onnx_runtime.build_fused_graph(package)
    options = onnx_runtime.session_options()
    path = tmp_path / "optimized.onnx"
    options.optimized_model_filepath = str(path)
    names = list(weights)
    options.add_external_initializers(
        names, [ort.OrtValue.ortvalue_from_numpy(weights[name]) for name in names]
    )
    ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    optimized = onnx.load(str(path), load_external_data=False)
    nodes = list(optimized.graph.node)
    ops = [node.op_type for node in nodes]
    n = len(package.layers)
    assert ops == ["DynamicQuantizeMatMul", "Mul", "Relu"] * (n - 1) + [
        "DynamicQuantizeMatMul",
        "Mul",
        "Tanh",
    ], ops
    init = {t.name: t for t in optimized.graph.initializer}
    for i in range(n):
        matmul, mul = nodes[3 * i], nodes[3 * i + 1]
        kernel, b_scale, zero_point, bias = matmul.input[1:5]
        # u8 x s8 where the CPU sums products exactly (VNNI), u8 x u8 (kernel + 128) where it
        # saturates them (AVX2 only): see onnx_runtime.u8s8_saturates.
        kernel_type = (onnx.TensorProto.UINT8 if onnx_runtime.u8s8_saturates()
                       else onnx.TensorProto.INT8)
        assert init[kernel].data_type == kernel_type
        assert list(init[b_scale].dims) == [] and onnx.numpy_helper.to_array(init[b_scale]) == 1
        assert init[zero_point].data_type == kernel_type
        assert bias == f"bias_over_scale_{i}"
        layer = package.layers[i]
        np.testing.assert_allclose(weights[bias] * layer.kernel_scale, layer.bias, rtol=1e-6)
        assert mul.input[1] == f"kernel_scale_{i}"
        assert list(init[mul.input[1]].dims) == [package.layers[i].kernel.shape[1]]  # per column
    # the self-contained model runs the same numerics
    session = ort.InferenceSession(
        onnx_runtime.build_model(package, fused=True).SerializeToString(),
        providers=["CPUExecutionProvider"],
    )
    obs = gaussian_observations(4)
    np.testing.assert_allclose(
        session.run(None, {onnx_runtime.INPUT: obs})[0],
        onnx_runtime.fused_forward_np(package, obs),
        atol=1e-5,
    )
    with pytest.raises(ValueError, match="activation_bits == 8"):
        onnx_runtime.build_fused_graph(make_package("int4"))


def _int8_with_a_zero_scale() -> q.PolicyPackage:
    package = make_package("int8")
    first = package.layers[0]
    scale = first.kernel_scale.copy()
    scale[0] = 0.0  # not something AQT makes; bias / scale cannot be undone
    layers = (q.DenseParams(first.kernel, first.bias, scale), *package.layers[1:])
    return dataclasses.replace(package, layers=layers)


@pytest.mark.parametrize("spec", ("fp32", "fp16", "bf16", "int4", "int8-zero-scale"))
def test_fused_runtime_delegates_to_the_exact_graph(spec):
    """Float, int2..int7 and (unusual) zero-kernel-scale int8 packages run exactly what
    ``onnxruntime`` runs."""
    from actorq.runtime.onnx_runtime import OnnxRuntime

    if spec == "int8-zero-scale":
        package, spec = _int8_with_a_zero_scale(), "int8"
        reference_forward = q.make_reference_forward(package)
    else:
        package, reference_forward = make_package(spec), reference(spec)
    fused, exact = make_policy_runtime(FUSED), make_policy_runtime("onnxruntime")
    assert isinstance(fused, OnnxRuntime)
    fused.load(package)
    exact.load(package)
    assert fused.graph_kind == exact.graph_kind == "exact"
    obs = observations(8)
    np.testing.assert_array_equal(fused(obs), exact(obs))
    assert np.abs(fused(obs) - reference_forward(obs)).max() < TOLERANCE[spec]


def test_fused_runtime_switches_graphs_and_reuses_them_for_new_versions():
    runtime = make_policy_runtime(FUSED)
    obs = gaussian_observations(2)
    kinds = []
    for spec, seed in (("int8", 0), ("int8", 1), ("int4", 0), ("int8", 2)):
        runtime.load(make_package(spec, SMALL, seed))
        kinds.append(runtime.graph_kind)
        atol = FUSED_BAR if runtime.graph_kind == "fused" else TOLERANCE[spec]
        np.testing.assert_allclose(runtime(obs), reference(spec, SMALL, seed)(obs), atol=atol)
    assert kinds == ["fused", "fused", "exact", "fused"]
    assert runtime.graph_builds == 3  # the same-shape int8 version reused the fused graph


def test_observation_layer_is_exact_where_u8_x_s8_saturates():
    """Inputs that quantize to 127 against +-127 weights: every pair of u8 x s8 products
    (255 * 127 * 2 with the +128 zero point) overflows int16. CPUs without VNNI (AVX2 only)
    saturate such pairs in ORT's u8 x s8 kernel (0.18 off on real walker observations before the
    observation layer went u8 x u8); the exact runtime must still match the reference."""
    from actorq.runtime import onnx_runtime

    rng = np.random.default_rng(3)
    kernel = np.where(rng.random((OBS, 16)) < 0.5, 127, -127).astype(np.int8)
    layers = (
        q.DenseParams(kernel, np.zeros(16, np.float32), np.full(16, 1e-3, np.float32)),
        q.DenseParams(np.ones((16, ACT), np.int8), np.zeros(ACT, np.float32),
                      np.full(ACT, 1e-3, np.float32)),
    )
    package = q.PolicyPackage(quantizer="int8", version=1, layers=layers, activation="relu",
                              output_activation="none", activation_bits=8)
    runtime = make_policy_runtime("onnxruntime")
    runtime.load(package)
    x = np.ones((3, OBS), np.float32) * np.array([[1.0], [2.0], [-3.0]], np.float32)
    reference = q.make_reference_forward(package)(x)
    np.testing.assert_allclose(runtime(x), reference, rtol=1e-5, atol=1e-5)
    assert onnx_runtime.signed_input_layers(package) == frozenset({0})


@pytest.mark.parametrize("saturating_cpu", [False, True])
def test_unsigned_codes_above_127_are_exact_on_every_cpu(monkeypatch, saturating_cpu):
    """uact_int8 rows after a ReLU reach code 255. Against +-127 weights every pair of u8 x s8
    products overflows int16, which CPUs without VNNI saturate. On such CPUs those layers take
    the u8 x u8 kernel; elsewhere u8 x s8. Both must equal the reference (which adds the codes'
    -128 shift back on XLA's s8 path)."""
    from actorq.runtime import onnx_runtime

    if not saturating_cpu and onnx_runtime.u8s8_saturates():
        # This CPU's u8 x s8 kernel really saturates (AVX2 without VNNI): the u8 x s8 path
        # cannot be shown exact here; the saturating case below covers this CPU.
        pytest.skip("u8 x s8 saturates on this CPU: a non-saturating one cannot be simulated")
    monkeypatch.setattr(onnx_runtime, "u8s8_saturates", lambda: saturating_cpu)
    rng = np.random.default_rng(5)
    kernel = np.where(rng.random((16, ACT)) < 0.5, 127, -127).astype(np.int8)
    layers = (
        q.DenseParams(np.ones((OBS, 16), np.int8), np.zeros(16, np.float32),
                      np.full(16, 1e-2, np.float32)),
        q.DenseParams(kernel, np.zeros(ACT, np.float32), np.full(ACT, 1e-3, np.float32)),
    )
    package = q.PolicyPackage(quantizer="uact_int8", version=1, layers=layers,
                              activation="relu", output_activation="none", activation_bits=8,
                              unsigned_activations=True)
    expected = {0, 1} if saturating_cpu else {0}
    assert onnx_runtime.unsigned_kernel_layers(package) == frozenset(expected)
    runtime = make_policy_runtime("onnxruntime")
    runtime.load(package)
    x = np.abs(observations(4)) + 1.0  # every hidden unit positive and equal: codes of 255
    reference = q.make_reference_forward(package)(x)
    np.testing.assert_allclose(runtime(x), reference, rtol=1e-5, atol=1e-5)
    # The same integers as a float computation of codes 255 (the shift is exact).
    hidden = np.maximum(x @ np.ones((OBS, 16), np.float32) * 1e-2, 0)
    np.testing.assert_allclose(reference, hidden @ kernel.astype(np.float32) * 1e-3, rtol=1e-2,
                               atol=1e-4)


@pytest.mark.parametrize("runtime_name", RUNTIMES)
def test_calibrated_gptq_package_matches_reference(runtime_name):
    """GPTQ only picks other integers: the package is an ordinary uact_int8 one, run exactly."""
    net, params = _params(SMALL, 0)
    quantizer = q.make_quantizer("fp32head_gptq_uact_int8").with_calibration(observations(64))
    package = quantizer.quantize(params, net, version=1)
    assert package.unsigned_activations and package.layers[-1].kernel_scale is None
    runtime = make_policy_runtime(runtime_name)
    runtime.load(q.PolicyPackage.from_bytes(package.to_bytes()))
    obs = observations(8, seed=2)
    diff = np.abs(runtime(obs) - q.make_reference_forward(package)(obs))
    assert diff.max() < 1e-2 and np.median(diff) < 1e-5
