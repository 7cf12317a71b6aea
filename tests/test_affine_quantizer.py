"""``affine_int<b>``, the QuaRL paper's uniform affine quantizer (simulated): hand-computed
scales and zero points, per-tensor dense and per-channel conv grids, static activation ranges,
and every runtime running its packages."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import actorq.quantization as q
from actorq.networks import make_q_network, mlp_layers
from actorq.networks.conv import make_torso_network
from actorq.quantization.affine import affine_kernel
from actorq.quantization.numerics import affine_fake_quant, affine_params
from actorq.quantization.package import DenseParams, PackageError, PolicyPackage
from actorq.runtime.policy_runtime import make_policy_runtime


def test_scale_and_zero_point_by_hand():
    scale, zero_point = affine_params(np.float32(-1.0), np.float32(3.0), 8)
    assert scale == pytest.approx(4.0 / 255.0)
    assert zero_point == 64.0  # round(1 / (4 / 255)) = round(63.75)
    x = np.array([-1.0, 0.0, 3.0, 1.0, 10.0, -7.0], np.float32)
    out = affine_fake_quant(x, np.float32(-1.0), np.float32(3.0), 8)
    step = 4.0 / 255.0
    # -1 -> code 0; 0 -> the zero point, exact; 3 -> 191 + 64 = 255; 1 -> 64 + 64 = 128;
    # out of range clips to the ends of the grid.
    np.testing.assert_allclose(out, [-64 * step, 0.0, 191 * step, 64 * step, 191 * step,
                                     -64 * step], rtol=1e-6)
    assert out[1] == 0.0


def test_ranges_are_widened_to_hold_zero():
    scale, zero_point = affine_params(np.float32(2.0), np.float32(5.0), 4)
    assert (scale, zero_point) == (pytest.approx(5.0 / 15.0), 0.0)
    scale, zero_point = affine_params(np.float32(-6.0), np.float32(-3.0), 4)
    assert (scale, zero_point) == (pytest.approx(6.0 / 15.0), 15.0)
    # An empty range: scale 1, and zero stays zero.
    assert affine_params(np.float32(0.0), np.float32(0.0), 8) == (1.0, 0.0)


def test_dense_kernels_share_one_grid_per_tensor():
    kernel = np.array([[-0.5, 0.25], [1.0, 0.0], [0.3, -0.1]], np.float32)
    out = affine_kernel(kernel, 4)
    scale, zero_point = affine_params(np.float32(-0.5), np.float32(1.0), 4)  # 0.1, 5
    codes = out / scale + zero_point
    np.testing.assert_allclose(codes, np.round(codes), atol=1e-4)  # all on one grid
    np.testing.assert_allclose(out, [[-0.5, 0.2], [1.0, 0.0], [0.3, -0.1]], atol=1e-6)


def test_conv_kernels_get_one_grid_per_output_channel():
    kernel = np.zeros((1, 1, 2, 2), np.float32)
    kernel[..., 0] = [[[-1.0, 1.0]]]  # channel 0 in [-1, 1]
    kernel[..., 1] = [[[0.0, 100.0]]]  # channel 1 in [0, 100]
    kernel[0, 0, 0, 0] = -0.013
    out = affine_kernel(kernel, 8)
    # Per tensor, channel 0 would round on a step of 101 / 255 = 0.4: -0.013 would become 0.
    step0 = 2.0 / 255.0
    assert abs(out[0, 0, 0, 0] - (-0.013)) <= step0 / 2 + 1e-7
    assert out[0, 0, 0, 0] != 0.0
    assert out[0, 0, 1, 1] == pytest.approx(100.0)


@pytest.fixture(scope="module")
def dense_policy():
    net = make_q_network(3, (32, 32))
    params = net.init(jax.random.key(0), np.zeros((1, 5), np.float32))
    rng = np.random.default_rng(0)
    obs = (rng.standard_normal((200, 5)) * [5.0, 1.0, 0.5, 2.0, 0.1]).astype(np.float32)
    return net, params, obs


def test_static_ranges_come_from_the_float_network_on_calibration(dense_policy):
    net, params, obs = dense_policy
    package = q.make_quantizer("affine_int8").with_calibration(obs).quantize(params, net, 2)
    assert package.affine_bits == 8 and package.activation_bits is None
    np.testing.assert_allclose(package.layers[0].input_range, [obs.min(), obs.max()])
    kernels = [layer.kernel for layer in package.layers]
    hidden = np.maximum(obs @ kernels[0] + package.layers[0].bias, 0)
    np.testing.assert_allclose(package.layers[1].input_range, [hidden.min(), hidden.max()],
                               rtol=1e-5)
    # The first layer by hand: the input on its grid, then the (already gridded) kernel.
    lo, hi = package.layers[0].input_range
    x = affine_fake_quant(obs[:4], lo, hi, 8)
    first = package.layers[0]
    expected = np.maximum(x @ first.kernel + first.bias, 0)
    second = package.layers[1]
    lo, hi = second.input_range
    expected = np.maximum(affine_fake_quant(expected, lo, hi, 8) @ second.kernel + second.bias, 0)
    third = package.layers[2]
    lo, hi = third.input_range
    expected = affine_fake_quant(expected, lo, hi, 8) @ third.kernel + third.bias
    np.testing.assert_allclose(q.make_reference_forward(package)(obs[:4]), expected, atol=1e-4)
    # The kernels are float32 on their grids: what the layers hold is not the float network's.
    assert not np.array_equal(package.layers[0].kernel, np.asarray(mlp_layers(params)[0][0]))


@pytest.mark.parametrize("calibrated", [True, False])
@pytest.mark.parametrize("runtime_name", ["xla", "onnxruntime", "onnxruntime_fused"])
def test_every_runtime_runs_affine_packages(dense_policy, runtime_name, calibrated):
    net, params, obs = dense_policy
    quantizer = q.make_quantizer("affine_int6")
    if calibrated:
        quantizer = quantizer.with_calibration(obs[:100])
    package = PolicyPackage.from_bytes(quantizer.quantize(params, net, 0).to_bytes())
    assert (package.layers[1].input_range is not None) == calibrated
    reference = q.make_reference_forward(package)(obs[100:])
    runtime = make_policy_runtime(runtime_name)
    runtime.load(package)
    out = np.concatenate([runtime(obs[100:101]), runtime(obs[101:])])
    assert np.abs(out - reference).max() < 1e-3
    assert np.median(np.abs(out - reference)) < 1e-5


@pytest.mark.parametrize("runtime_name", ["xla", "onnxruntime"])
def test_conv_affine_packages_run_on_pixels(runtime_name):
    rng = np.random.default_rng(2)
    frames = (rng.random((16, 10, 10, 4)) < 0.3).astype(np.uint8)
    net = make_torso_network("minatar", 3, frames.shape[1:], 1.0)
    params = net.init(jax.random.key(0), jnp.zeros((1, *frames.shape[1:]), jnp.uint8))
    package = q.make_quantizer("affine_int8").with_calibration(frames[:8]).quantize(params, net, 0)
    assert package.pixels and package.layers[0].input_range.tolist() == [0.0, 1.0]
    reference = q.make_reference_forward(package)(frames[8:])
    runtime = make_policy_runtime(runtime_name)
    runtime.load(package)
    assert np.abs(runtime(frames[8:]) - reference).max() < 1e-3
    fp32 = q.make_reference_forward(q.make_quantizer("fp32").quantize(params, net, 0))(frames)
    assert np.abs(q.make_reference_forward(package)(frames) - fp32).max() < 0.1


def test_conv_affine_calibrates_on_frames_handed_over_as_float32():
    """Learners and the PTQ study pass calibration through ``first_layer_inputs`` (float32):
    pixel frames must give the same ranges as their uint8 codes (they raised before)."""
    from actorq.quantization.package import first_layer_inputs

    rng = np.random.default_rng(3)
    frames = (rng.random((8, 10, 10, 4)) < 0.3).astype(np.uint8)
    net = make_torso_network("minatar", 3, frames.shape[1:], 1.0)
    params = net.init(jax.random.key(0), jnp.zeros((1, *frames.shape[1:]), jnp.uint8))
    quantizer = q.make_quantizer("affine_int8")
    from_codes = quantizer.with_calibration(frames).quantize(params, net, 0)
    from_floats = quantizer.with_calibration(first_layer_inputs(frames, None)).quantize(
        params, net, 0)
    for a, b in zip(from_codes.layers, from_floats.layers):
        np.testing.assert_array_equal(a.input_range, b.input_range)


def test_affine_fields_are_checked(dense_policy):
    net, params, obs = dense_policy
    package = q.make_quantizer("affine_int8").with_calibration(obs).quantize(params, net, 0)
    with pytest.raises(PackageError, match="input_range"):
        dataclasses.replace(package, affine_bits=None)  # ranges without affine numerics
    first = package.layers[0]
    with pytest.raises(PackageError, match="input_range"):
        dataclasses.replace(package, layers=(
            DenseParams(first.kernel, first.bias, input_range=np.array([1.0, -1.0], np.float32)),
            *package.layers[1:]))
    integer = q.make_quantizer("rtn_int8").quantize(params, net, 0)
    with pytest.raises(PackageError, match="affine_bits"):
        dataclasses.replace(integer, affine_bits=8)
    with pytest.raises(ValueError, match="NaN"):
        q.make_quantizer("affine_int8").with_calibration(np.full((2, 5), np.nan, np.float32))
