"""The int8 recipe (``int<b>``): input smoothing folded into the first layer, bias correction,
the package's ``input_smoothing`` field, and calibration on the learner's and the PTQ study's
side."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

import actorq.quantization as q
from actorq.networks import make_policy_network, make_q_network, mlp_layers
from actorq.quantization import package as package_module
from actorq.quantization.package import (
    FORMAT_VERSION,
    PackageError,
    PolicyPackage,
    first_layer_inputs,
)
from actorq.quantization.recipe import RecipeIntQuantizer, corrected_biases, smoothing_factors
from actorq.runtime.policy_runtime import make_policy_runtime

OBS, HIDDEN = 6, (64, 64)
# Feature scales over four orders of magnitude: a velocity next to an angle.
FEATURE_SCALES = np.array([100.0, 30.0, 1.0, 0.3, 0.03, 0.01], np.float32)


@pytest.fixture(scope="module")
def policy():
    """A 6 -> 64 -> 64 -> 2 Q-network with non-zero biases and mixed-scale observations."""
    net = make_q_network(2, HIDDEN)
    params = net.init(jax.random.key(0), np.zeros((1, OBS), np.float32))
    rng = np.random.default_rng(0)
    params = jax.tree_util.tree_map_with_path(
        lambda path, leaf: leaf + 0.3 * rng.standard_normal(leaf.shape).astype(np.float32)
        if "bias" in jax.tree_util.keystr(path) else leaf, params)
    # As in a trained policy, the first layer amplifies the small features: every feature then
    # matters about as much to the output.
    first = mlp_layers(params)[0][0]
    params = jax.tree_util.tree_map(
        lambda leaf: leaf / FEATURE_SCALES[:, None] if leaf is first else leaf, params)
    calibration = (rng.standard_normal((256, OBS)) * FEATURE_SCALES).astype(np.float32)
    test = (rng.standard_normal((512, OBS)) * FEATURE_SCALES).astype(np.float32)
    return net, params, calibration, test


def test_smoothing_factors_are_smoothquants_by_hand():
    x = np.array([[2.0, -0.5, 0.0], [-8.0, 0.25, 0.0]], np.float32)
    w = np.array([[0.5, -2.0], [4.0, 1.0], [3.0, 3.0]], np.float32)
    # max|x| = 8, 0.5, 0 (never seen: 1); max|W row| = 2, 4, 3.
    np.testing.assert_allclose(smoothing_factors(x, w, 0.5),
                               [np.sqrt(8 / 2), np.sqrt(0.5 / 4), 1.0], rtol=1e-6)
    np.testing.assert_allclose(smoothing_factors(x, w, 1.0), [8.0, 0.5, 1.0], rtol=1e-6)
    np.testing.assert_allclose(smoothing_factors(x, w, 0.0), [0.5, 0.25, 1.0], rtol=1e-6)
    with pytest.raises(ValueError, match="alpha"):
        smoothing_factors(x, w, 1.5)


def test_the_smoothed_package_is_the_same_network_with_balanced_inputs(policy):
    net, params, calibration, _ = policy
    package = q.make_quantizer("int8").with_calibration(calibration).quantize(params, net, 3)
    kernel = np.asarray(mlp_layers(params)[0][0])
    factors = smoothing_factors(calibration, kernel)
    np.testing.assert_array_equal(package.input_smoothing, factors)
    # The first kernel's rows were multiplied by the factors before rounding: what the package
    # holds is within half a step of W * s, row by row.
    first = package.layers[0]
    dequantized = first.kernel.astype(np.float32) * first.kernel_scale
    assert np.all(np.abs(dequantized - kernel * factors[:, None])
                  <= 0.5 * first.kernel_scale + 1e-6)
    # And every runtime divides the observation by the same factors before that layer.
    np.testing.assert_allclose(package.prepare(calibration[:4]), calibration[:4] / factors,
                               rtol=1e-6)


def test_the_recipe_cuts_the_error_of_mixed_scale_observations(policy):
    """What round-to-nearest loses on observations whose features differ by 10^4 in scale,
    and what each ingredient of the recipe wins back (same integers' grid, same bytes ±)."""
    net, params, calibration, test = policy
    fp32 = np.asarray(net.apply(params, test))

    def error(spec: str) -> float:
        quantizer = q.make_quantizer(spec)
        if hasattr(quantizer, "with_calibration"):
            quantizer = quantizer.with_calibration(calibration)
        out = q.make_reference_forward(quantizer.quantize(params, net, 0))(test)
        return float(np.mean(np.abs(out - fp32)))

    rtn, recipe, no_smoothing = error("rtn_int8"), error("int8"), error("nosmooth_int8")
    assert recipe < 0.5 * rtn, (recipe, rtn)
    assert recipe < no_smoothing, (recipe, no_smoothing)


def test_bias_correction_zeroes_the_mean_output_error_of_each_layer_by_hand():
    """One integer layer: corrected bias = b - mean_x(x) @ (W_q - W), checked element by element,
    so the mean error of the weights' rounding over the calibration rows is gone."""
    rng = np.random.default_rng(1)
    kernel = rng.standard_normal((5, 3)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    inputs = (np.abs(rng.standard_normal((16, 5))) + 1.0).astype(np.float32)  # positive means
    values = np.round(kernel * 2.0).astype(np.int8)  # a coarse grid: step 0.5
    scale = np.full(3, 0.5, np.float32)
    package = PolicyPackage("rtn_int8", 0, (q.DenseParams(values, bias, scale),),
                            activation_bits=8)
    (corrected,) = corrected_biases([kernel], package, inputs)
    mean_x = inputs.mean(axis=0)
    for j in range(3):
        shift = sum(mean_x[i] * (values[i, j] * 0.5 - kernel[i, j]) for i in range(5))
        assert corrected[j] == pytest.approx(bias[j] - shift, abs=1e-5)
    dequantized = values.astype(np.float32) * scale
    np.testing.assert_allclose((inputs @ dequantized + corrected).mean(axis=0),
                               (inputs @ kernel + bias).mean(axis=0), atol=1e-5)


def test_bias_correction_follows_the_float_network_through_hidden_layers(policy):
    """Deeper layers are corrected at the float network's mean input to them (after ReLU)."""
    net, params, calibration, _ = policy
    package = q.make_quantizer("nosmooth_int8").quantize(params, net, 0)  # uncalibrated: RTN
    kernels = [np.asarray(kernel) for kernel, _ in mlp_layers(params)]
    rows = calibration[:16]
    corrected = corrected_biases(kernels, package, rows)
    hidden = np.maximum(rows @ kernels[0] + package.layers[0].bias, 0)
    second = package.layers[1]
    shift = hidden.mean(axis=0) @ (second.kernel.astype(np.float32) * second.kernel_scale
                                   - kernels[1])
    np.testing.assert_allclose(corrected[1], second.bias - shift, atol=1e-4)


def test_without_calibration_the_recipe_is_round_to_nearest(policy):
    net, params, _, _ = policy
    recipe = q.make_quantizer("int8").quantize(params, net, 0)
    rtn = q.make_quantizer("rtn_int8").quantize(params, net, 0)
    assert recipe.input_smoothing is None
    for a, b in zip(recipe.layers, rtn.layers):
        np.testing.assert_array_equal(a.kernel, b.kernel)
        np.testing.assert_array_equal(a.bias, b.bias)


def test_the_float_head_variant_is_the_recipe_with_an_fp32_output_layer(policy):
    net, params, calibration, test = policy
    spec = "recipe_fp32head_int8"
    head = q.make_quantizer(spec).with_calibration(calibration).quantize(params, net, 0)
    recipe = q.make_quantizer("int8").with_calibration(calibration).quantize(params, net, 0)
    *body, last = head.layers
    assert last.kernel.dtype == np.float32 and last.kernel_scale is None
    np.testing.assert_array_equal(last.kernel, np.asarray(mlp_layers(params)[-1][0]))
    np.testing.assert_array_equal(last.bias, np.asarray(mlp_layers(params)[-1][1]))
    # The hidden layers are the recipe's: smoothed, rounded and bias-corrected alike.
    np.testing.assert_array_equal(head.input_smoothing, recipe.input_smoothing)
    for ours, theirs in zip(body, recipe.layers[:-1]):
        np.testing.assert_array_equal(ours.kernel, theirs.kernel)
        np.testing.assert_array_equal(ours.bias, theirs.bias)
    reference = np.asarray(net.apply(params, test))
    errors = {name: float(np.abs(q.make_reference_forward(package)(test) - reference).mean())
              for name, package in ((spec, head), ("int8", recipe))}
    assert errors[spec] < errors["int8"]
    # Uncalibrated, it is round-to-nearest with the fp32 head.
    plain = q.make_quantizer(spec).quantize(params, net, 0)
    rtn_head = q.make_quantizer("fp32head_int8").quantize(params, net, 0)
    for a, b in zip(plain.layers, rtn_head.layers):
        np.testing.assert_array_equal(a.kernel, b.kernel)


def test_a_one_layer_float_head_keeps_the_smoothing_folded_in():
    net = make_q_network(2, ())
    params = net.init(jax.random.key(1), np.zeros((1, OBS), np.float32))
    obs = (np.random.default_rng(1).standard_normal((64, OBS)) * FEATURE_SCALES).astype(np.float32)
    quantizer = q.make_quantizer("recipe_fp32head_int8").with_calibration(obs)
    package = quantizer.quantize(params, net, 0)
    assert package.input_smoothing is not None and package.layers[0].kernel_scale is None
    # The package divides the input by the smoothing: the float head must be the smoothed kernel.
    np.testing.assert_allclose(q.make_reference_forward(package)(obs), net.apply(params, obs),
                               rtol=1e-4, atol=1e-4)


def test_unsigned_codes_only_where_a_relu_feeds_the_layer():
    net = make_policy_network(2, (16, 16))  # ReLU hidden layers
    params = net.init(jax.random.key(0), np.zeros((1, OBS), np.float32))
    package = q.make_quantizer("recipe_uact_int8").quantize(params, net, 0)
    assert net.activation == "relu" and package.unsigned_activations
    tanh = dataclasses.replace(net, activation="tanh")
    assert not q.make_quantizer("recipe_uact_int8").quantize(params, tanh, 0).unsigned_activations


@pytest.mark.parametrize("runtime_name", ["xla", "onnxruntime", "onnxruntime_fused"])
def test_every_runtime_runs_recipe_packages_with_a_normalizer(policy, runtime_name):
    net, params, calibration, test = policy
    mean = calibration.mean(axis=0)
    std = calibration.std(axis=0)
    extras = {"observation_mean": mean, "observation_std": std}
    quantizer = q.make_quantizer("int8").with_calibration(first_layer_inputs(calibration, extras))
    package = dataclasses.replace(quantizer.quantize(params, net, 0), **extras)
    package = PolicyPackage.from_bytes(package.to_bytes())
    reference = q.make_reference_forward(package)(test)
    runtime = make_policy_runtime(runtime_name)
    runtime.load(package)
    out = np.concatenate([runtime(test[:1]), runtime(test[1:64])])
    if runtime_name != "onnxruntime_fused":  # fused: ORT's own activation numerics
        assert np.abs(out - reference[:64]).max() < 1e-2
    # The fp32 network on normalized inputs is what the package approximates.
    fp32 = np.asarray(net.apply(params, first_layer_inputs(test, extras)))
    for approximation in (reference[:64], out):
        assert np.mean(np.abs(approximation - fp32[:64])) < 0.05 * np.mean(np.abs(fp32))


def test_input_smoothing_round_trips_and_old_readers_refuse_it(policy, monkeypatch):
    net, params, calibration, _ = policy
    package = q.make_quantizer("int8").with_calibration(calibration).quantize(params, net, 1)
    data = package.to_bytes()
    back = PolicyPackage.from_bytes(data)
    np.testing.assert_array_equal(back.input_smoothing, package.input_smoothing)
    assert back.to_bytes() == data
    monkeypatch.setattr(package_module, "READABLE_FORMATS", (1, 2, 3, 4, 5))
    with pytest.raises(PackageError, match=f"unsupported package format {FORMAT_VERSION}"):
        PolicyPackage.from_bytes(data)


@pytest.mark.parametrize("smoothing", [np.zeros(OBS, np.float32), np.ones(OBS - 1, np.float32),
                                       -np.ones(OBS, np.float32)])
def test_bad_input_smoothing_is_refused(policy, smoothing):
    net, params, _, _ = policy
    package = q.make_quantizer("rtn_int8").quantize(params, net, 0)
    with pytest.raises(PackageError, match="input_smoothing"):
        dataclasses.replace(package, input_smoothing=smoothing)


def test_bad_calibration_is_refused(policy):
    net, params, calibration, _ = policy
    quantizer = q.make_quantizer("int8")
    with pytest.raises(ValueError, match="calibration"):
        quantizer.with_calibration(np.zeros(OBS, np.float32))
    with pytest.raises(ValueError, match="NaN"):
        quantizer.with_calibration(np.full((4, OBS), np.nan, np.float32))
    with pytest.raises(ValueError, match="features"):
        quantizer.with_calibration(calibration[:, :3]).quantize(params, net, 0)
    assert isinstance(quantizer, RecipeIntQuantizer)


class _Learner:
    steps = 5

    def __init__(self, params):
        self._params = params

    def policy_params(self):
        return self._params

    def policy_extras(self):  # what an on-policy learner adds (head, normalizer): none here
        return {}


class _NormalizingBuilder:
    """What a PPO builder hands the publisher: the network and the observation normalizer."""

    action_value_head = False

    def __init__(self, net, mean, std):
        self.policy_network = net
        self._extras = {"head": "deterministic", "observation_mean": mean,
                        "observation_std": std}

    def policy_extras(self, learner):
        del learner
        return dict(self._extras)


def test_the_publisher_calibrates_on_normalized_observations(policy):
    """The learner's replay batch is raw; a package with a normalizer must be calibrated on
    what its first layer reads."""
    from launchpad_programs.nodes import LearnerVariableSource

    net, params, calibration, _ = policy
    mean, std = calibration.mean(axis=0), 4.0 * calibration.std(axis=0)
    source = LearnerVariableSource(_Learner(params), _NormalizingBuilder(net, mean, std), "int8")
    assert source.calibrate(calibration)
    version, data = source.latest()
    package = PolicyPackage.from_bytes(data)
    assert version == 5 and package.observation_mean is not None
    kernel = np.asarray(mlp_layers(params)[0][0])
    normalized = first_layer_inputs(calibration, {"observation_mean": mean,
                                                  "observation_std": std})
    np.testing.assert_allclose(package.input_smoothing, smoothing_factors(normalized, kernel),
                               rtol=1e-6)
    assert not np.allclose(package.input_smoothing, smoothing_factors(calibration, kernel))


@pytest.mark.parametrize("agent,preset,float_head", [
    ("dqn", "cartpole_small", True), ("ppo", "cartpole", False), ("ddpg", "pendulum", False)])
def test_the_default_int8_keeps_only_an_action_value_head_fp32(agent, preset, float_head):
    """DQN's builder says its outputs are action values: its publisher's ``int8`` (the recipe)
    keeps the output layer fp32 and every other layer int8, calibrated or not. Other agents'
    int8 packages are integer throughout. Quantizers without the variant are left alone."""
    import importlib

    from launchpad_programs import nodes

    config = importlib.import_module(f"configs.{agent}_actorq").get_config(preset)
    builder = nodes.make_builder_for(config)
    assert builder.action_value_head is float_head
    net = builder.policy_network
    params = net.init(jax.random.key(0), np.zeros((1, builder.observation_size), np.float32))
    learner = _Learner(params)
    source = nodes.LearnerVariableSource(learner, builder, "int8")
    calibration = np.random.default_rng(0).standard_normal(
        (64, builder.observation_size)).astype(np.float32)
    for calibrate in (False, True):
        if calibrate:
            assert source.calibrate(calibration)
            learner.steps += 1
        package = PolicyPackage.from_bytes(source.latest()[1])
        assert package.quantizer == "int8"
        assert all(layer.kernel_scale is not None for layer in package.layers[:-1])
        assert (package.layers[-1].kernel_scale is None) is float_head
        if float_head:
            np.testing.assert_array_equal(package.layers[-1].kernel,
                                          np.asarray(mlp_layers(params)[-1][0]))
    assert package.input_smoothing is not None  # the calibrated (last) package is the recipe's
    plain = q.make_policy_quantizer("rtn_int8", action_values=True)
    assert plain == q.make_quantizer("rtn_int8")
    assert plain.quantize(params, net, 0).layers[-1].kernel_scale is not None
