"""ONNX Runtime actor runtimes: int8 policies on ORT's u8 x s8 -> s32 kernels.

:class:`OnnxRuntime` (``actor_runtime=onnxruntime``) turns a
:class:`~actorq.quantization.package.PolicyPackage` into a small ONNX graph (built with
``onnx.helper``) that computes exactly what ``actorq.quantization.reference`` defines:

* integer layers: per-row dynamic activation quantization with the AQT numerics of
  ``actorq.quantization.numerics``, an exact integer matmul (``MatMulIntegerToFloat``: u8 x s8,
  or u8 x u8 for the observation layer and unsigned codes, which are exact on CPUs without VNNI),
  then the bias in a separate node;
* float layers: fp32 ``MatMul``; fp16/bf16 packages round each layer input to the kernel dtype and
  multiply by the kernel upcast to fp32 (exact, since such products are exact in fp32).

:class:`FusedOnnxRuntime` (``actor_runtime=onnxruntime_fused``) runs int8 packages with 8-bit
activations (:func:`fused_eligible`) through ORT's fused ``DynamicQuantizeMatMul``: per-tensor
asymmetric activation quantization, close to but not exactly the reference (:func:`fused_forward_np`
is its NumPy twin). Every other package runs the exact graph.

Weights are graph initializers (pre-packed once per session); a new policy version brings new
weights as in-memory external initializers into a graph built once per network shape. Why the
graphs are built this way, with the measurements behind each choice, is on the performance page
(``docs/performance.md``, "How the ONNX Runtime graphs are built").
"""

from __future__ import annotations

import functools
import time

import ml_dtypes
import numpy as np
import onnxruntime as ort
from onnx import ModelProto, TensorProto, helper, numpy_helper

from actorq.quantization.numerics import (
    NUMPY_ACTIVATIONS,
    affine_params,
    check_bits,
    max_int,
    max_uint,
    quant_bound,
    unsigned_quant_bound,
)
from actorq.quantization.package import ConvParams, PolicyPackage

OPSET = 21
MS_DOMAIN = "com.microsoft"
IR_VERSION = 10
INPUT = "observations"
OUTPUT = "outputs"
# Abs-max floor standing in for "zero -> 1" (see the module docstring). Its scale and reciprocal
# stay normal floats for every bit width.
ABS_MAX_FLOOR = np.float32(2.0**-100)

_ACTIVATION_OPS = {"relu": "Relu", "elu": "Elu", "tanh": "Tanh"}
_FLOAT_CASTS = {
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(ml_dtypes.bfloat16): TensorProto.BFLOAT16,
}


def session_options(threads: int = 1) -> ort.SessionOptions:
    """One actor = one thread: intra/inter-op 1, sequential, all graph optimisations."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # ORT warns about harmless things at session creation
    return options


def package_signature(package: PolicyPackage) -> tuple:
    """Everything the graph depends on except the weight values."""
    return (
        package.activation,
        package.output_activation,
        package.activation_bits,
        package.unsigned_activations,
        package.input_shape,
        package.input_scale,
        tuple(
            (layer.kernel.shape, str(layer.kernel.dtype), layer.kernel_scale is not None,
             getattr(layer, "strides", None), layer.input_code_scale is not None)
            for layer in package.layers
        ),
    )


@functools.cache
def u8s8_saturates() -> bool:
    """Whether this machine's ORT ``u8 x s8`` kernel saturates pairs of products to int16.

    x86 CPUs without VNNI (AVX2 only, e.g. AMD EPYC Milan) run MLAS's u8 x s8 GEMM on
    ``vpmaddubsw``, which adds two u8 x s8 products into a *saturating* int16: any pair with
    u8 values above 127 can clip (255 * 127 * 2 > 32767). With VNNI the sum is exact int32.
    Probed once per process on a 1 x 2 product that saturates on such machines.
    """
    a = np.array([[255, 255]], np.uint8)
    b = np.array([[127], [127]], np.int8)
    node = helper.make_node("MatMulInteger", ["a", "b"], ["y"])
    graph = helper.make_graph(
        [node], "probe", [helper.make_tensor_value_info("a", TensorProto.UINT8, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 1])],
        [numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    session = ort.InferenceSession(model.SerializeToString(), session_options(),
                                   providers=["CPUExecutionProvider"])
    return int(session.run(None, {"a": a})[0][0, 0]) != 2 * 255 * 127


def signed_input_layers(package: PolicyPackage) -> frozenset[int]:
    """Integer layers of the exact graph whose uint8 input can exceed 127: those not fed by a
    ReLU (the observation layer), quantized as ``q + 128``. ReLU-fed rows stay in ``[0, 127]``,
    where ``u8 x s8`` is exact on every CPU."""
    return frozenset(
        i for i, layer in enumerate(package.layers)
        if layer.kernel_scale is not None and not (i > 0 and package.activation == "relu")
    )


def unsigned_kernel_layers(package: PolicyPackage) -> frozenset[int]:
    """Integer layers of the exact graph whose kernel goes to ORT as ``uint8``: the
    :func:`signed_input_layers`, every integer convolution (ORT's ``ConvInteger`` is exact with
    int8 kernels too, but ~2.5x slower than with uint8 ones: docs/performance.md), and, on CPUs
    whose ``u8 x s8`` kernel saturates, ReLU-fed layers of packages with 8-bit unsigned
    activation codes (codes up to 255)."""
    layers = set(signed_input_layers(package))
    layers |= {i for i, layer in enumerate(package.layers)
               if layer.kernel_scale is not None and isinstance(layer, ConvParams)
               and i not in requantizing_layers(package)}
    if u8s8_saturates():  # static codes reach 255
        layers |= requantizing_layers(package)
        layers |= {i for i, layer in enumerate(package.layers)
                   if layer.input_code_scale is not None}
    bits = package.activation_bits
    if package.unsigned_activations and bits is not None and max_uint(bits) > 127 \
            and u8s8_saturates():
        layers |= {
            i for i, layer in enumerate(package.layers)
            if layer.kernel_scale is not None and package.unsigned_input(i)
        }
    return frozenset(layers)


def requantizing_layers(package: PolicyPackage) -> frozenset[int]:
    """Integer convolutions whose output the next layer reads as static codes: one
    ``QLinearConv`` each (ONNX Runtime's fast int8 convolution; s8 kernels where ``u8 x s8`` is
    exact, u8 ones with zero point 128 elsewhere)."""
    return frozenset(i for i in range(len(package.layers))
                     if package.requantize_constants(i) is not None)


def graph_weights(
    package: PolicyPackage, unsigned_kernels: frozenset[int] | None = None
) -> dict[str, np.ndarray]:
    """The graph's named weight arrays (int8 kernels are used as they are, without a copy).

    ``unsigned_kernels``: integer layers whose kernel goes to ORT as ``uint8`` (``kernel + 128``
    with zero point 128; default :func:`unsigned_kernel_layers`). ``u8 x u8`` widens to int16
    before multiplying, so it is exact on every CPU, where ``u8 x s8`` is not (see
    :func:`u8s8_saturates`).
    """
    if unsigned_kernels is None:
        unsigned_kernels = unsigned_kernel_layers(package)
    shapes = package.layer_input_shapes() if package.pixels else None
    weights = {}
    code_scales = package.code_scales()
    for i, layer in enumerate(package.layers):
        if layer.input_code_scale is not None:
            weights[f"code_scale_{i}"] = np.float32(code_scales[i])
        constants = package.requantize_constants(i)
        if constants is not None:  # QLinearConv: 1-D per-channel vectors, int32 bias codes
            weights[f"bias_codes_{i}"] = constants[0]
            unsigned = i in unsigned_kernels
            weights[f"kernel_zp_{i}"] = np.full(layer.kernel.shape[-1], 128 if unsigned else 0,
                                                np.uint8 if unsigned else np.int8)
        kernel = layer.kernel
        conv = isinstance(layer, ConvParams)
        if conv:  # ONNX convolutions are NCHW with OIHW kernels
            kernel = np.transpose(kernel, (3, 2, 0, 1))
        elif i > 0 and isinstance(package.layers[i - 1], ConvParams):
            # The graph flattens NCHW feature maps; the package's rows are in (h, w, c) order.
            height, width, channels = package.layers[i - 1].output_shape(shapes[i - 1])
            kernel = (kernel.reshape(height, width, channels, -1).transpose(2, 0, 1, 3)
                      .reshape(kernel.shape))
        # Per-channel vectors broadcast over [N, C, H, W] as [C, 1, 1] (QLinearConv: [C]).
        channel_shape = (-1, 1, 1) if conv and constants is None else (-1,)
        if layer.kernel_scale is not None:
            if i in unsigned_kernels:
                weights[f"kernel_{i}"] = (kernel.astype(np.int16) + 128).astype(np.uint8)
            else:
                weights[f"kernel_{i}"] = kernel
            weights[f"kernel_scale_{i}"] = np.asarray(layer.kernel_scale,
                                                      np.float32).reshape(channel_shape)
        else:  # fp32 as is; fp16 / bf16 -> fp32 is exact
            weights[f"kernel_{i}"] = np.asarray(kernel).astype(np.float32, copy=False)
        if constants is None:  # QLinearConv takes bias_codes instead
            weights[f"bias_{i}"] = np.asarray(layer.bias, np.float32).reshape(channel_shape)
    return {name: np.ascontiguousarray(value) for name, value in weights.items()}


class _Graph:
    """A tiny ``onnx.helper`` wrapper: named constants and nodes with unique outputs."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.constants: list = []

    def const(self, value) -> str:
        name = f"const_{len(self.constants)}"
        self.constants.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], domain: str = "", **attrs) -> str:
        out = f"{op_type.lower()}_{len(self.nodes)}"
        self.nodes.append(
            helper.make_node(op_type, inputs, [out], name=out, domain=domain, **attrs)
        )
        return out


def build_graph(package: PolicyPackage) -> tuple[ModelProto, dict[str, np.ndarray]]:
    """The ONNX model of ``package``'s network and its named weights.

    The model declares the weights as external data to be supplied in memory
    (``SessionOptions.add_external_initializers``); :func:`build_model` embeds them instead.
    Pixel packages take ``uint8 [batch, H, W, C]``, transposed once to NCHW for ONNX's
    convolutions; integer convolutions are ``ConvInteger`` (u8 x u8, exact), and one activation
    scale per sample covers its whole feature map, as in the reference.
    """
    layers = package.layers
    weights = graph_weights(package)
    g = _Graph()
    if any(layer.kernel_scale is not None for layer in layers):
        if package.activation_bits is None:
            raise ValueError("a package with integer layers needs activation_bits")
        bits = check_bits(package.activation_bits)
        limit = max_int(bits)
        c_axis = g.const(np.array([-1], np.int64))
        c_map_axes = g.const(np.array([1, 2, 3], np.int64))  # one scale per NCHW sample
        c_floor = g.const(ABS_MAX_FLOOR)
        c_inv_bound = g.const(np.float32(1.0) / np.float32(quant_bound(bits)))
        c_one = g.const(np.float32(1.0))
        c_zp_signed, c_zp_unsigned = g.const(np.uint8(128)), g.const(np.uint8(0))
        unsigned_kernels = unsigned_kernel_layers(package)
        # clip bounds +-m in the uint8 domain: [0, m] (ReLU rows, zp 0), [128 - m, 128 + m]
        c_u_high = g.const(np.uint8(limit))
        if package.unsigned_activations:  # ReLU rows on the unsigned grid [0, 2**b - 1]
            c_inv_ubound = g.const(np.float32(1.0) / np.float32(unsigned_quant_bound(bits)))
            c_uu_high = g.const(np.uint8(max_uint(bits)))
        c_s_low, c_s_high = g.const(np.uint8(128 - limit)), g.const(np.uint8(128 + limit))

    x = INPUT
    codes = package.pixels  # x holds exact uint8 codes (the observation's, or static ones)
    requantizing = requantizing_layers(package)
    if codes and isinstance(layers[0], ConvParams):
        x = g.op("Transpose", [x], perm=[0, 3, 1, 2])
    elif codes:
        x = g.op("Flatten", [x], axis=1)
    relu_pending = False  # x is pre-ReLU; its ReLU is folded into the next quantization
    for i, layer in enumerate(layers):
        conv = isinstance(layer, ConvParams)
        if not conv and i > 0 and isinstance(layers[i - 1], ConvParams):
            x = g.op("Flatten", [x], axis=1)  # NCHW order: the kernel rows match (graph_weights)
        if layer.kernel_scale is not None and codes:
            # Pixel (or static) codes are the layer's exact unsigned input, worth input_scale
            # (or its input_code_scale) each.
            xq, zero_point = x, c_zp_unsigned
            x_scale = (f"code_scale_{i}" if layer.input_code_scale is not None
                       else g.const(np.float32(package.input_scale)))
        elif layer.kernel_scale is not None:
            axes = c_map_axes if conv else c_axis
            if relu_pending:  # max|relu(y)| == max(max(y), 0); the floor also covers <= 0
                abs_max = g.op("ReduceMax", [x, axes], keepdims=1)
            else:
                abs_max = g.op("ReduceMax", [g.op("Abs", [x]), axes], keepdims=1)
            unsigned = relu_pending and package.unsigned_activations
            inv_bound = c_inv_ubound if unsigned else c_inv_bound
            x_scale = g.op("Mul", [g.op("Max", [abs_max, c_floor]), inv_bound])
            scaled = g.op("Mul", [x, g.op("Reciprocal", [x_scale])])
            # round_half_even(v) + zp, saturated to [0, 255]. Clipping the integers afterwards
            # equals the reference's clip-then-round (the bounds are integers), on 4x fewer bytes.
            # With zero point 0 the saturation at 0 is the folded ReLU.
            if relu_pending:
                xq = g.op("QuantizeLinear", [scaled, c_one, c_zp_unsigned])
                if unsigned and max_uint(bits) < 255:
                    xq = g.op("Clip", [xq, "", c_uu_high])
                elif not unsigned:
                    xq = g.op("Clip", [xq, "", c_u_high])
                zero_point = c_zp_unsigned
            else:
                xq = g.op("QuantizeLinear", [scaled, c_one, c_zp_signed])
                xq = g.op("Clip", [xq, c_s_low, c_s_high])
                zero_point = c_zp_signed
        if i in requantizing:  # static codes out, the ReLU in the clip at 0
            x = g.op("QLinearConv", [xq, x_scale, c_zp_unsigned, f"kernel_{i}",
                                     f"kernel_scale_{i}", f"kernel_zp_{i}", f"code_scale_{i + 1}",
                                     c_zp_unsigned, f"bias_codes_{i}"],
                     strides=list(layer.strides))
            relu_pending = False
            continue
        if layer.kernel_scale is not None and conv:
            acc = g.op("ConvInteger", [xq, f"kernel_{i}", zero_point, c_zp_signed],
                       strides=list(layer.strides))
            # acc * (x_scale * kernel_scale), the reference's order of operations
            y = g.op("Mul", [g.op("Cast", [acc], to=TensorProto.FLOAT),
                             g.op("Mul", [x_scale, f"kernel_scale_{i}"])])
        elif layer.kernel_scale is not None:
            # A scalar b_scale, the per-channel kernel scale in its own Mul: ORT's per-column
            # b_scale output path costs more than the extra node (docs/performance.md).
            inputs = [xq, f"kernel_{i}", x_scale, c_one, zero_point]
            if i in unsigned_kernels:  # u8 x u8: exact on CPUs without VNNI too
                inputs.append(c_zp_signed)
            y = g.op("Mul", [g.op("MatMulIntegerToFloat", inputs, domain=MS_DOMAIN),
                             f"kernel_scale_{i}"])
        else:
            if codes:
                x = g.op("Mul", [g.op("Cast", [x], to=TensorProto.FLOAT),
                                 g.const(np.float32(package.input_scale))])
            if relu_pending:
                x = g.op("Relu", [x])
            if package.affine_bits is not None:
                x = _affine_fake_quant(g, x, layer.input_range, package.affine_bits,
                                       axes=[1, 2, 3] if conv else [1])
            y = _float_matmul(g, x, i, layer)
        codes = False
        y = g.op("Add", [y, f"bias_{i}"])  # not inside MatMulIntegerToFloat: see module doc
        last = i == len(layers) - 1
        act = package.output_activation if last else package.activation
        relu_pending = act == "relu" and not last and layers[i + 1].kernel_scale is not None
        x = y if relu_pending else _activation(g, y, act)
    return _finish_model(g, package, weights)


def _affine_fake_quant(g: _Graph, x: str, input_range: np.ndarray | None, bits: int,
                       axes: list[int]) -> str:
    """``x`` on the ``bits``-bit affine grid of ``input_range`` (static), or of each sample's
    own range over ``axes``: :func:`actorq.quantization.numerics.affine_fake_quant`."""
    top = np.float32(2**bits - 1)
    if input_range is not None:
        scale, zero_point = affine_params(np.float32(input_range[0]),
                                          np.float32(input_range[1]), bits)
        c_scale, c_zero_point = g.const(np.float32(scale)), g.const(np.float32(zero_point))
    else:
        c_axes, c_zero = g.const(np.array(axes, np.int64)), g.const(np.float32(0.0))
        lo = g.op("Min", [g.op("ReduceMin", [x, c_axes], keepdims=1), c_zero])
        hi = g.op("Max", [g.op("ReduceMax", [x, c_axes], keepdims=1), c_zero])
        c_scale = g.op("Div", [g.op("Sub", [hi, lo]), g.const(top)])
        c_scale = g.op("Where", [g.op("Equal", [c_scale, c_zero]), g.const(np.float32(1.0)),
                                 c_scale])
        c_zero_point = g.op("Round", [g.op("Div", [g.op("Neg", [lo]), c_scale])])
    q = g.op("Add", [g.op("Round", [g.op("Div", [x, c_scale])]), c_zero_point])
    q = g.op("Clip", [q, g.const(np.float32(0.0)), g.const(top)])
    return g.op("Mul", [g.op("Sub", [q, c_zero_point]), c_scale])


def _float_matmul(g: _Graph, x: str, i: int, layer) -> str:
    """fp32 ``MatMul`` (or ``Conv``) of float layer ``i``; fp16/bf16: the input rounded to the
    kernel dtype."""
    cast = _FLOAT_CASTS.get(np.dtype(layer.kernel.dtype))
    if cast is not None:  # the reference casts the layer input to the kernel dtype
        x = g.op("Cast", [g.op("Cast", [x], to=cast)], to=TensorProto.FLOAT)
    if isinstance(layer, ConvParams):
        return g.op("Conv", [x, f"kernel_{i}"], strides=list(layer.strides))
    return g.op("MatMul", [x, f"kernel_{i}"])


def _activation(g: _Graph, y: str, act: str) -> str:
    if act in _ACTIVATION_OPS:
        return g.op(_ACTIVATION_OPS[act], [y])
    if act != "none":
        raise ValueError(f"unsupported activation {act!r}")
    return y


def _finish_model(
    g: _Graph, package: PolicyPackage, weights: dict[str, np.ndarray]
) -> tuple[ModelProto, dict[str, np.ndarray]]:
    """The model of ``g``'s nodes (the last one's output renamed to OUTPUT) and its weights,
    declared as in-memory external data."""
    g.nodes[-1].output[0] = OUTPUT
    externals = []
    for name, value in weights.items():
        tensor = TensorProto(
            name=name, data_type=helper.np_dtype_to_tensor_dtype(value.dtype), dims=value.shape
        )
        tensor.data_location = TensorProto.EXTERNAL
        entry = tensor.external_data.add()
        entry.key, entry.value = "location", f"in-memory/{name}"
        externals.append(tensor)
    if package.pixels:
        input_info = helper.make_tensor_value_info(INPUT, TensorProto.UINT8,
                                                   ["batch", *package.input_shape])
    else:
        input_info = helper.make_tensor_value_info(INPUT, TensorProto.FLOAT,
                                                   ["batch", package.input_size])
    graph = helper.make_graph(
        g.nodes,
        "actorq_policy",
        [input_info],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", package.output_size])],
        g.constants + externals,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MS_DOMAIN, 1)],
        producer_name="actorq",
    )
    model.ir_version = IR_VERSION
    return model, weights


def _bias_over_scale(layer) -> np.ndarray | None:
    """``bias / kernel_scale`` of an integer layer, or None where that is not exactly undoable
    by multiplying with the scale again (a zero, non-finite or overflowing scale)."""
    scale = np.asarray(layer.kernel_scale, np.float32).reshape(-1)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        ratio = np.asarray(layer.bias, np.float32) / scale
    if not (np.all(np.isfinite(scale)) and np.all(scale != 0) and np.all(np.isfinite(ratio))):
        return None
    return ratio.astype(np.float32)


def fused_eligible(package: PolicyPackage) -> bool:
    """Whether :class:`FusedOnnxRuntime` runs ``package`` on ``DynamicQuantizeMatMul``: it has
    integer layers, 8-bit activations (ORT's fused op always quantizes activations to 8 bits),
    and non-zero finite kernel scales (all the built-in quantizers make)."""
    integer = [layer for layer in package.layers if layer.kernel_scale is not None]
    return (
        not package.pixels  # DynamicQuantizeMatMul has no convolution and no uint8 input
        and package.activation_bits == 8
        and bool(integer)
        and all(_bias_over_scale(layer) is not None for layer in integer)
    )


def fused_unsigned_kernels(package: PolicyPackage) -> frozenset[int]:
    """The fused graph's activations are asymmetric uint8 in ``[0, 255]``: on CPUs whose
    ``u8 x s8`` kernel saturates (:func:`u8s8_saturates`) every integer kernel goes as uint8
    (exact, slower); elsewhere none does (ORT's fast path)."""
    if not u8s8_saturates():
        return frozenset()
    return frozenset(i for i, layer in enumerate(package.layers) if layer.kernel_scale is not None)


def fused_graph_weights(package: PolicyPackage) -> dict[str, np.ndarray]:
    """:func:`graph_weights`, with ``bias_i`` of every integer layer replaced by
    ``bias_over_scale_i = bias_i / kernel_scale_i`` (the fused graph's weights)."""
    weights = graph_weights(package, fused_unsigned_kernels(package))
    for i, layer in enumerate(package.layers):
        if layer.kernel_scale is not None:
            ratio = _bias_over_scale(layer)
            if ratio is None:
                raise ValueError(f"layer {i}: kernel scales must be non-zero and finite")
            weights[f"bias_over_scale_{i}"] = np.ascontiguousarray(ratio)
            del weights[f"bias_{i}"]
    return weights


def build_fused_graph(package: PolicyPackage) -> tuple[ModelProto, dict[str, np.ndarray]]:
    """Like :func:`build_graph`, with every integer layer ORT's ``DynamicQuantizeMatMul``.

    Same int8 kernels and per-output-channel scales as :func:`build_graph`; the activation
    numerics are ORT's per-tensor asymmetric uint8 ones (:func:`fused_forward_np`), not the
    reference's. Each integer layer is
    ``Mul(DynamicQuantizeMatMul(x, kernel, 1, 0, bias / kernel_scale), kernel_scale)``: the
    per-column scale is applied after the fused op (see the module docstring for why).
    """
    if not fused_eligible(package):
        raise ValueError(
            "the fused graph needs integer layers with activation_bits == 8 and non-zero finite "
            f"kernel scales, got activation_bits={package.activation_bits!r} "
            f"({package.quantizer})"
        )
    weights = fused_graph_weights(package)
    g = _Graph()
    b_zero_point = g.const(np.int8(0))  # symmetric weights; the int8 type selects u8 x s8
    b_zero_point_unsigned = g.const(np.uint8(128))  # kernel + 128 as uint8: u8 x u8
    unsigned_kernels = fused_unsigned_kernels(package)
    unit_scale = g.const(np.float32(1.0))
    x = INPUT
    for i, layer in enumerate(package.layers):
        if layer.kernel_scale is not None:
            zero_point = b_zero_point_unsigned if i in unsigned_kernels else b_zero_point
            y = g.op(
                "DynamicQuantizeMatMul",
                [x, f"kernel_{i}", unit_scale, zero_point, f"bias_over_scale_{i}"],
                domain=MS_DOMAIN,
            )
            y = g.op("Mul", [y, f"kernel_scale_{i}"])
        else:
            y = g.op("Add", [_float_matmul(g, x, i, layer), f"bias_{i}"])
        last = i == len(package.layers) - 1
        x = _activation(g, y, package.output_activation if last else package.activation)
    return _finish_model(g, package, weights)



def quantize_tensor_u8_np(x: np.ndarray) -> tuple[np.ndarray, np.float32, np.uint8]:
    """ORT's dynamic activation quantization (``DynamicQuantizeLinear`` / the first stage of
    ``DynamicQuantizeMatMul``): one asymmetric uint8 scale and zero point for the whole tensor.

    Returns (uint8 values, scale, zero point).
    """
    x = np.asarray(x, np.float32)
    lo = np.minimum(x.min(), np.float32(0)) if x.size else np.float32(0)
    hi = np.maximum(x.max(), np.float32(0)) if x.size else np.float32(0)
    scale = np.float32(1) if hi == lo else np.float32((hi - lo) / np.float32(255))
    zero_point = np.uint8(np.rint(np.clip(np.float32(0) - lo / scale, 0, 255)))
    q = np.clip(np.rint(x / scale) + np.float32(zero_point), 0, 255).astype(np.uint8)
    return q, scale, zero_point


def fused_forward_np(package: PolicyPackage, observations: np.ndarray) -> np.ndarray:
    """NumPy twin of the :func:`build_fused_graph` model (what ``onnxruntime_fused`` computes),
    e.g. to check its bias handling. Not the reference numerics: see the module docstring.

    Per integer layer: ``(acc * x_scale + bias / kernel_scale) * kernel_scale``, which is
    ``acc * x_scale * kernel_scale + bias`` up to float rounding.
    """
    x = np.asarray(observations, np.float32)
    for i, layer in enumerate(package.layers):
        if layer.kernel_scale is not None:
            q, scale, zero_point = quantize_tensor_u8_np(x)
            acc = (q.astype(np.int32) - np.int32(zero_point)) @ layer.kernel.astype(np.int32)
            y = acc.astype(np.float32) * scale + _bias_over_scale(layer)
            y = y * np.asarray(layer.kernel_scale, np.float32).reshape(-1)
        else:
            kernel = np.asarray(layer.kernel)
            y = x.astype(kernel.dtype).astype(np.float32) @ kernel.astype(np.float32)
            y = y + np.asarray(layer.bias, np.float32)
        last = i == len(package.layers) - 1
        act = package.output_activation if last else package.activation
        x = np.asarray(NUMPY_ACTIVATIONS[act](y.astype(np.float32)), np.float32)
    return x


# graph kind -> (graph builder, weights of a new version with the same graph)
_GRAPHS = {
    "exact": (build_graph, graph_weights),
    "fused": (build_fused_graph, fused_graph_weights),
}


def build_model(package: PolicyPackage, fused: bool = False) -> ModelProto:
    """A self-contained ONNX model of ``package`` (weights embedded), e.g. to save or inspect.

    ``fused``: the :func:`build_fused_graph` model instead of the exact one. Both use
    ``com.microsoft`` contrib ops (``MatMulIntegerToFloat`` / ``DynamicQuantizeMatMul``), so
    they are meant for ONNX Runtime.
    """
    model, weights = (build_fused_graph if fused else build_graph)(package)
    for tensor in model.graph.initializer:
        if tensor.name in weights:
            tensor.CopyFrom(numpy_helper.from_array(weights[tensor.name], tensor.name))
    return model


class OnnxRuntime:
    """ONNX Runtime (CPU EP) actor runtime. One thread by default (one actor = one core).

    Attributes:
      threads: ORT intra-op threads.
      last_load_seconds: wall time of the latest :meth:`load`.
      graph_builds: how often the graph was (re)built; it only happens when the network changes.
    """

    name = "onnxruntime"

    def __init__(self, threads: int = 1) -> None:
        self.threads = int(threads)
        self.last_load_seconds: float | None = None
        self.graph_builds = 0
        self._signature: tuple | None = None
        self._graph_bytes: bytes | None = None
        self._session: ort.InferenceSession | None = None
        self._weight_values: list[ort.OrtValue] = []  # must outlive the session that uses them
        self._package: PolicyPackage | None = None

    @property
    def package(self) -> PolicyPackage | None:
        """The loaded policy package."""
        return self._package

    @property
    def session(self) -> ort.InferenceSession:
        """The ORT session of the loaded package (for inspection)."""
        if self._session is None:
            raise RuntimeError("no policy package loaded")
        return self._session

    def graph_kind_for(self, package: PolicyPackage) -> str:
        """Which graph runs ``package``: ``"exact"`` (:func:`build_graph`) here."""
        return "exact"

    @property
    def graph_kind(self) -> str | None:
        """The graph of the loaded package (``"exact"`` or ``"fused"``), None before a load."""
        return None if self._signature is None else self._signature[0]

    def load(self, package: PolicyPackage) -> None:
        start = time.perf_counter()
        kind = self.graph_kind_for(package)
        signature = (kind, package_signature(package))
        rebuild = signature != self._signature
        if rebuild:
            model, weights = _GRAPHS[kind][0](package)
            graph_bytes = model.SerializeToString()
        else:
            weights, graph_bytes = _GRAPHS[kind][1](package), self._graph_bytes
        options = session_options(self.threads)
        names = list(weights)
        values = [ort.OrtValue.ortvalue_from_numpy(weights[name]) for name in names]
        options.add_external_initializers(names, values)
        session = ort.InferenceSession(graph_bytes, options, providers=["CPUExecutionProvider"])
        # Commit only once the new session exists: a failed load keeps the previous policy.
        self._session, self._weight_values, self._package = session, values, package
        if rebuild:
            self._signature, self._graph_bytes = signature, graph_bytes
            self.graph_builds += 1
        self.last_load_seconds = time.perf_counter() - start

    def __call__(self, observations: np.ndarray) -> np.ndarray:
        if self._session is None:
            raise RuntimeError("no policy package loaded")
        observations = np.ascontiguousarray(self._package.prepare(observations))
        return self._session.run([OUTPUT], {INPUT: observations})[0]


class FusedOnnxRuntime(OnnxRuntime):
    """ONNX Runtime with ORT's fused ``DynamicQuantizeMatMul`` for int8 packages.

    Runs the package's own int8 weights and per-channel scales, but quantizes activations per
    tensor (asymmetric uint8) inside the kernel, as ORT's ``quantize_dynamic`` models do: faster
    than :class:`OnnxRuntime`, *not* bit-for-bit the reference (see the module docstring;
    :func:`fused_forward_np` is what it computes). Packages that are not int8 with 8-bit
    activations (:func:`fused_eligible`) run :class:`OnnxRuntime`'s exact graph unchanged.
    """

    name = "onnxruntime_fused"

    def graph_kind_for(self, package: PolicyPackage) -> str:
        """``"fused"`` for int8 packages with 8-bit activations (:func:`fused_eligible`), else
        ``"exact"``."""
        return "fused" if fused_eligible(package) else "exact"
