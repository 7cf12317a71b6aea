"""Conv policies: the package's conv layers, exact pixel codes, and every runtime on real frames."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

import actorq.quantization as q
from actorq.envs.registry import make_environment
from actorq.quantization.package import (
    FORMAT_VERSION,
    ConvParams,
    DenseParams,
    PackageError,
    PolicyPackage,
)
from actorq.runtime.policy_runtime import make_policy_runtime

jax = pytest.importorskip("jax")
jnp = jax.numpy

from actorq.networks.conv import make_torso_network, scan_without_loop  # noqa: E402

RUNTIMES = ("xla", "onnxruntime", "onnxruntime_fused")
SPECS = ("fp32", "fp16", "int8", "uact_int8", "int4", "fp32in_int8", "fp32head_int8")


def _frames(task: str, count: int, seed: int = 0) -> np.ndarray:
    """``count`` observations of a seeded random-policy rollout (resets on episode ends)."""
    env = make_environment(task, seed=seed)
    rng = np.random.default_rng(seed)
    actions = env.action_spec().num_values
    timestep = env.reset()
    frames = []
    try:
        while len(frames) < count:
            frames.append(np.asarray(timestep.observation))
            timestep = env.step(int(rng.integers(actions)))
            if timestep.last():
                timestep = env.reset()
    finally:
        env.close()
    return np.stack(frames)


@pytest.fixture(scope="module")
def minatar_policy():
    frames = _frames("minatar_breakout", 64)
    net = make_torso_network("minatar", 3, frames.shape[1:], 1.0)
    params = net.init(jax.random.key(0), jnp.zeros((1, *frames.shape[1:]), jnp.uint8))
    return net, params, frames


@pytest.fixture(scope="module")
def nature_policy():
    frames = _frames("pong", 8)
    net = make_torso_network("nature", 6, frames.shape[1:], 1.0 / 255.0)
    params = net.init(jax.random.key(1), jnp.zeros((1, *frames.shape[1:]), jnp.uint8))
    return net, params, frames


def test_real_frames_are_uint8_end_to_end(minatar_policy, nature_policy):
    for _, _, frames in (minatar_policy, nature_policy):
        assert frames.dtype == np.uint8 and frames.ndim == 4
    assert nature_policy[2].shape[1:] == (84, 84, 4)
    assert set(np.unique(minatar_policy[2])) <= {0, 1}


@pytest.mark.parametrize("policy", ["minatar_policy", "nature_policy"])
def test_every_runtime_computes_the_reference_on_real_frames(policy, request):
    net, params, frames = request.getfixturevalue(policy)
    flax_outputs = np.asarray(net.apply(params, frames))
    for spec in SPECS:
        package = PolicyPackage.from_bytes(q.make_quantizer(spec).quantize(params, net, 3)
                                           .to_bytes())
        assert package.pixels and package.input_shape == frames.shape[1:]
        reference = q.make_reference_forward(package)(frames)
        # 8- and 16-bit packages stay within 5% (of the largest output) of the float network;
        # int4 runs here for the runtimes' exactness only.
        scale = max(float(np.abs(flax_outputs).max()), 1e-3)
        if spec != "int4":
            assert np.abs(reference - flax_outputs).max() <= 0.05 * scale, spec
        for name in RUNTIMES:
            runtime = make_policy_runtime(name)
            runtime.load(package)
            for batch in (frames, frames[:1]):
                # fp16: XLA's float16 convolutions round differently at each batch size.
                atol = (1e-3 if spec == "fp16" else 1e-5) * scale
                np.testing.assert_allclose(runtime(batch), reference[: len(batch)],
                                           rtol=1e-5, atol=atol,
                                           err_msg=f"{policy} {spec} {name}")


def test_pixel_codes_enter_the_first_integer_layer_exactly(minatar_policy):
    """The first conv of an int8 package computes the integer convolution of the codes, scaled
    by input_scale * kernel_scale: no rounding of the input."""
    from actorq.quantization.reference import integer_layer, package_arrays

    net, params, frames = minatar_policy
    package = q.make_quantizer("int8").quantize(params, net, 1)
    first = package.layers[0]
    assert isinstance(first, ConvParams) and first.kernel.dtype == np.int8
    # Hand-computed: the exact int64 convolution of codes and int8 kernel (VALID, stride 1).
    codes = frames[:4].astype(np.int64)
    kernel = first.kernel.astype(np.int64)
    kh, kw = kernel.shape[:2]
    out_h, out_w = codes.shape[1] - kh + 1, codes.shape[2] - kw + 1
    acc = np.zeros((len(codes), out_h, out_w, kernel.shape[3]), np.int64)
    for i in range(kh):
        for j in range(kw):
            acc += np.einsum("bhwc,co->bhwo", codes[:, i:i + out_h, j:j + out_w, :], kernel[i, j])
    expected = (acc.astype(np.float32) * (np.float32(package.input_scale) * first.kernel_scale)
                + first.bias)
    layer = package_arrays(package)[0]
    got = integer_layer(jnp.asarray(frames[:4]), layer, 8, "codes", first.strides,
                        package.input_scale)
    np.testing.assert_array_equal(np.asarray(got), expected)


def test_conv_kernels_are_quantized_per_output_channel(nature_policy):
    net, params, _ = nature_policy
    package = q.make_quantizer("int8").quantize(params, net, 1)
    convs = [layer for layer in package.layers if isinstance(layer, ConvParams)]
    assert [layer.strides for layer in convs] == [(4, 4), (2, 2), (1, 1)]
    for layer in convs:
        assert layer.kernel_scale.shape == (layer.kernel.shape[3],)
        # Abs-max calibration per output channel: every channel reaches its largest code.
        assert np.all(np.abs(layer.kernel).reshape(-1, layer.kernel.shape[3]).max(axis=0)
                      == 127)
    fp32 = q.make_quantizer("fp32").quantize(params, net, 1)
    ratio = len(fp32.to_bytes()) / len(package.to_bytes())
    assert 3.9 < ratio < 4.1


def test_the_format_goes_up_and_other_formats_are_refused(minatar_policy):
    net, params, _ = minatar_policy
    data = q.make_quantizer("int8").quantize(params, net, 1).to_bytes()
    header_len = int.from_bytes(data[4:8], "little")
    header = msgpack.unpackb(data[8:8 + header_len])
    assert header["format"] == FORMAT_VERSION >= 5  # 5 brought conv layers
    assert header["layers"][0]["conv"] == {"strides": [1, 1], "padding": "VALID"}
    # A reader meets a newer format: refused, not misread.
    import struct
    import zlib

    header["format"] = FORMAT_VERSION + 1
    packed = msgpack.packb(header)
    body = b"AQPK" + struct.pack("<I", len(packed)) + packed + data[8 + header_len:-4]
    forged = body + struct.pack("<I", zlib.crc32(body))
    with pytest.raises(PackageError, match="unsupported package format"):
        PolicyPackage.from_bytes(forged)


def test_inconsistent_conv_packages_are_refused():
    conv = ConvParams(np.zeros((3, 3, 4, 16), np.float32), np.zeros(16, np.float32))
    dense = DenseParams(np.zeros((1024, 3), np.float32), np.zeros(3, np.float32))
    PolicyPackage("fp32", 0, (conv, dense), input_shape=(10, 10, 4), input_scale=1.0)
    with pytest.raises(PackageError, match="cannot read"):
        PolicyPackage("fp32", 0, (conv, dense), input_shape=(10, 10, 3), input_scale=1.0)
    with pytest.raises(PackageError, match="cannot read 256"):
        PolicyPackage("fp32", 0, (conv, dense), input_shape=(6, 6, 4), input_scale=1.0)
    with pytest.raises(PackageError, match="input_shape"):
        PolicyPackage("fp32", 0, (conv, dense))
    with pytest.raises(PackageError, match="padding"):
        ConvParams(np.zeros((3, 3, 4, 16), np.float32), np.zeros(16, np.float32), padding="SAME")
    package = PolicyPackage("fp32", 0, (conv, dense), input_shape=(10, 10, 4), input_scale=1.0)
    with pytest.raises(PackageError, match="shape"):
        package.prepare(np.zeros((1, 10, 10, 3), np.uint8))
    with pytest.raises(ValueError, match="integer codes"):
        package.prepare(np.full((1, 10, 10, 4), 0.5, np.float32))


def test_pixel_agents_and_torsos_fail_with_one_clear_message():
    from actorq.agents.registry import builder_for_config
    from configs import dqn_actorq, ppo_actorq

    config = dqn_actorq.get_config("minatar_breakout")
    builder = builder_for_config(config)
    assert builder.pixels and builder.replay_signature()["observation"].dtype == np.uint8
    assert builder.observation_scale == 1.0  # MinAtar's channels are 0/1
    config.learner.torso = "mlp"
    with pytest.raises(ValueError, match="learner.torso='mlp' takes flat observations"):
        builder_for_config(config).networks  # noqa: B018
    ppo = ppo_actorq.get_config("minatar_breakout")
    signature = builder_for_config(ppo).replay_signature()
    assert signature["observation"].dtype == np.uint8
    assert signature["observation"].shape == (128, 10, 10, 4)
    ppo.learner.qat_bits = 6
    with pytest.raises(ValueError, match="qat_bits"):
        builder_for_config(ppo).networks  # noqa: B018
    # An agent without conv networks refuses pixels (no such task exists yet: every pixel task
    # has discrete actions, and these agents need continuous ones).
    from dm_env import specs

    from actorq.agents.ddpg.builder import DDPGBuilder
    from actorq.agents.ddpg.config import DDPGConfig

    pixels = specs.BoundedArray((10, 10, 4), np.uint8, 0, 1)
    action = specs.BoundedArray((2,), np.float32, -1.0, 1.0)
    with pytest.raises(ValueError, match="DDPG takes flat observations"):
        DDPGBuilder(DDPGConfig(), {"observation": pixels, "action": action})


@pytest.mark.parametrize("agent", ["dqn", "ppo"])
def test_a_minatar_run_goes_through_the_whole_pipeline_in_uint8(agent, tmp_path):
    """Actor (int8 conv package) -> replay or queue (uint8 items) -> learner -> publish ->
    evaluation, on a short MinAtar run."""
    import json

    from experiments.pixel_pipeline import pipeline_config, summarize_run
    from launchpad_programs.launch import run_experiment

    config = pipeline_config(agent, "minatar_breakout", 512, "int8")
    if agent == "ppo":  # small batches: 2 environments x 32 steps, 2 minibatches
        config.envs_per_actor = 2
        config.learner.unrolls_per_batch = 2
        config.learner.unroll_length = 32
        config.learner.minibatches = 2
        config.chunk_size = 32
        config.replay.max_size, config.replay.min_size = 4, 2
    else:
        config.replay.min_size = 128
    config.run_dir = str(tmp_path / agent)
    run_experiment(config)
    row = summarize_run(agent, "minatar_breakout", tmp_path / agent)
    assert row["env_steps"] == 512 and row["learner_steps"] >= 1 and row["publishes"] >= 2
    assert row["evaluations"] == 3 and row["package_bytes"] < 140_000  # int8: ~4x under fp32
    saved = json.loads((tmp_path / agent / "config.json").read_text())
    assert saved["learner"]["torso"] == "minatar"
    # The recipe calibrated on the learner's replay frames: the last packages have static codes.
    summary = json.loads((tmp_path / agent / "summary.json").read_text())
    assert summary["calibrated_precisions"] == ["int8"]


# --------------------------------------------------------------- static codes (the int8 recipe)


def _assert_every_runtime_computes(package, reference, frames, scale, label):
    """Each runtime's outputs on ``frames`` (and on one frame) are the reference's."""
    for name in RUNTIMES:
        runtime = make_policy_runtime(name)
        runtime.load(package)
        for batch in (frames, frames[:1]):
            np.testing.assert_allclose(runtime(batch), reference[: len(batch)], rtol=1e-5,
                                       atol=1e-5 * scale, err_msg=f"{label} {name}")


def _calibrated(policy):
    net, params, frames = policy
    half = len(frames) // 2
    package = q.make_quantizer("int8").with_calibration(frames[:half]).quantize(params, net, 3)
    return net, params, frames, PolicyPackage.from_bytes(package.to_bytes())


@pytest.mark.parametrize("policy", ["minatar_policy", "nature_policy"])
def test_calibrated_int8_puts_static_codes_between_the_convolutions(policy, request):
    """With calibration frames the recipe gives every layer after a convolution a static code
    scale: the fp32 network's largest ReLU output over those frames / 255. Every runtime computes
    the reference on other frames, and the package stays as close to the float network as the
    dynamic round-to-nearest one."""
    from actorq.networks.mlp import mlp_layers
    from actorq.quantization.recipe import static_code_scales

    net, params, frames, package = _calibrated(request.getfixturevalue(policy))
    convs = len(net.conv_layers)
    assert [layer.input_code_scale is not None for layer in package.layers] == (
        [False] + [True] * convs + [False] * (len(package.layers) - convs - 1))
    expected = static_code_scales(mlp_layers(params)[:convs],
                                  [layer.strides for layer in package.layers[:convs]],
                                  frames[:len(frames) // 2], package.input_scale)
    assert [float(layer.input_code_scale[0]) for layer in package.layers[1:convs + 1]] == (
        [float(s) for s in expected])
    assert package.code_scales()[0] == package.input_scale
    flax_outputs = np.asarray(net.apply(params, frames))
    reference = q.make_reference_forward(package)(frames)
    rtn = q.make_reference_forward(q.make_quantizer("rtn_int8").quantize(params, net, 3))(frames)
    scale = float(np.abs(flax_outputs).max())
    assert np.abs(reference - flax_outputs).max() <= 0.05 * scale
    assert np.abs(reference - flax_outputs).mean() <= 1.5 * np.abs(rtn - flax_outputs).mean()
    _assert_every_runtime_computes(package, reference, frames, scale, policy)


def test_onnx_runtime_runs_static_codes_on_qlinearconv(nature_policy):
    from actorq.runtime.onnx_runtime import build_graph, requantizing_layers

    _, _, _, package = _calibrated(nature_policy)
    assert requantizing_layers(package) == {0, 1, 2}
    ops = [node.op_type for node in build_graph(package)[0].graph.node]
    assert ops.count("QLinearConv") == 3 and "ConvInteger" not in ops


def test_static_codes_are_the_hand_computed_requantization():
    """A 1x1 convolution of two channels: codes = clip(round((acc + round(bias / (s_x * s_w)))
    * s_x * s_w / s_y), 0, 255), rounding half to even; the clip at 0 is the ReLU."""
    from actorq.quantization.numerics import requantize_codes, requantize_constants

    kernel_scale = np.array([0.5, 0.25], np.float32)
    bias = np.array([1.0, -1.0], np.float32)  # 2 and -4 bias codes at s_x = 1
    bias_codes, multiplier = requantize_constants(1.0, kernel_scale, bias, 0.25)
    np.testing.assert_array_equal(bias_codes, [2, -4])
    np.testing.assert_array_equal(multiplier, [2.0, 1.0])
    acc = np.array([[1, 3], [-9, 100], [200, 300]], np.int32)
    # (1+2)*2 = 6, (3-4)*1 = -1 -> 0; (-9+2)*2 -> 0, 96; (202)*2 = 404 -> 255, 296 -> 255
    np.testing.assert_array_equal(requantize_codes(acc, bias_codes, multiplier),
                                  [[6, 0], [0, 96], [255, 255]])
    # Half to even: 2.5 -> 2, 3.5 -> 4.
    half = requantize_codes(np.array([[5, 7]], np.int32), np.zeros(2, np.int32),
                            np.float32([0.5, 0.5]))
    np.testing.assert_array_equal(half, [[2, 4]])
    # Through the package: a pixel conv whose next layer reads static codes.
    conv = ConvParams(np.array([[[[2, -1]]]], np.int8), bias, kernel_scale)
    dense = DenseParams(np.ones((2, 1), np.int8), np.zeros(1, np.float32),
                        np.ones(1, np.float32), input_code_scale=np.array([0.25], np.float32))
    package = PolicyPackage("int8", 1, (conv, dense), activation_bits=8, input_shape=(1, 1, 1),
                            input_scale=1.0)
    got = q.make_reference_forward(package)(np.array([[[[3]]]], np.uint8))
    # acc = (6, -3): codes ((6+2)*2, (-3-4)*1 -> 0) = (16, 0); dense: (16 + 0) * 0.25 * 1
    np.testing.assert_array_equal(got, [[4.0]])
    for name in RUNTIMES:
        runtime = make_policy_runtime(name)
        runtime.load(package)
        np.testing.assert_array_equal(runtime(np.array([[[[3]]]], np.uint8)), [[4.0]])


def test_static_codes_round_trip_and_misplaced_scales_are_refused(monkeypatch):
    from actorq.quantization import package as package_module

    conv = ConvParams(np.ones((3, 3, 4, 8), np.int8), np.zeros(8, np.float32),
                      np.ones(8, np.float32))
    dense = DenseParams(np.ones((512, 3), np.int8), np.zeros(3, np.float32),
                        np.ones(3, np.float32), input_code_scale=np.array([0.1], np.float32))
    package = PolicyPackage("int8", 1, (conv, dense), activation_bits=8,
                            input_shape=(10, 10, 4), input_scale=1.0)
    data = package.to_bytes()
    back = PolicyPackage.from_bytes(data)
    assert back.code_scales() == (1.0, pytest.approx(0.1))
    assert back.to_bytes() == data
    monkeypatch.setattr(package_module, "READABLE_FORMATS", (1, 2, 3, 4, 5, 6))
    with pytest.raises(PackageError, match=f"unsupported package format {FORMAT_VERSION}"):
        PolicyPackage.from_bytes(data)
    monkeypatch.undo()
    import dataclasses

    for bad, match in (
        (dict(activation_bits=4), "8-bit"),
        (dict(unsigned_activations=True), "8-bit"),
        (dict(activation="tanh"), "ReLU"),
    ):
        with pytest.raises(PackageError, match=match):
            dataclasses.replace(package, **bad)
    with pytest.raises(PackageError, match="one positive float"):
        dataclasses.replace(package, layers=(conv, dataclasses.replace(
            dense, input_code_scale=np.array([0.0], np.float32))))
    float_conv = ConvParams(np.ones((3, 3, 4, 8), np.float32), np.zeros(8, np.float32))
    with pytest.raises(PackageError, match="after an integer convolution"):
        dataclasses.replace(package, layers=(float_conv, dense))
    # The convolution before must itself read static codes: a second conv on dynamic codes.
    conv2 = ConvParams(np.ones((3, 3, 8, 8), np.int8), np.zeros(8, np.float32),
                       np.ones(8, np.float32))
    dense2 = dataclasses.replace(dense, kernel=np.ones((288, 3), np.int8))
    with pytest.raises(PackageError, match="static codes"):
        PolicyPackage("int8", 1, (conv, conv2, dense2), activation_bits=8,
                      input_shape=(10, 10, 4), input_scale=1.0)


@pytest.mark.parametrize("policy", ["minatar_policy", "nature_policy"])
def test_an_action_value_head_stays_fp32_after_static_codes(policy, request):
    """A DQN conv policy's ``int8`` (the recipe for action values): static codes between the
    convolutions and an fp32 output layer; every runtime computes the reference."""
    net, params, frames = request.getfixturevalue(policy)
    quantizer = q.make_policy_quantizer("int8", action_values=True)
    package = PolicyPackage.from_bytes(
        quantizer.with_calibration(frames[:8]).quantize(params, net, 3).to_bytes())
    assert package.layers[-1].kernel.dtype == np.float32 and package.layers[-1].kernel_scale is None
    assert all(layer.kernel.dtype == np.int8 for layer in package.layers[:-1])
    assert package.layers[1].input_code_scale is not None
    reference = q.make_reference_forward(package)(frames)
    scale = float(np.abs(np.asarray(net.apply(params, frames))).max())
    _assert_every_runtime_computes(package, reference, frames, scale, policy)


def test_scan_without_loop_is_lax_scan_with_no_while_loop():
    """The conv learners' scan: the same carry and stacked outputs as ``lax.scan``, traced with
    no loop (``lax.scan(unroll=True)`` keeps a one-trip while loop around its body, where
    XLA:CPU runs convolutions several times slower)."""
    def step(carry, x):
        total, count = carry
        return (total + x["a"] * x["b"], count + 1), {"sum": total, "x": x["a"]}

    xs = {"a": jnp.arange(12.0).reshape(4, 3), "b": jnp.linspace(-1.0, 1.0, 4)[:, None]}
    init = (jnp.zeros(3), jnp.zeros((), jnp.int32))
    expected = jax.lax.scan(step, init, xs)
    for unrolled in (False, True):
        got = scan_without_loop(step, init, xs, unrolled)
        # Equal up to float rounding (XLA may fuse a*b+c differently outside a loop).
        jax.tree_util.tree_map(lambda g, e: np.testing.assert_allclose(g, e, rtol=0, atol=1e-6),
                               got, expected)
    assert "while" not in str(jax.make_jaxpr(
        lambda i, x: scan_without_loop(step, i, x, True))(init, xs))
    assert "scan" in str(jax.make_jaxpr(lambda i, x: jax.lax.scan(step, i, x, unroll=True))(
        init, xs))
