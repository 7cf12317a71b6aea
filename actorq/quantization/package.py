"""The policy package: what the learner broadcasts and an actor runs.

One self-describing byte buffer::

    b"AQPK" | u32 header length | msgpack header | array payload | u32 crc32(all before)

The header names the quantizer, the policy version, the activations, the policy head and, per
layer (dense, or a ``VALID`` convolution with its strides), the dtype/shape/offset of each array.
A package may also carry the observation normalizer (per-feature mean and std, applied in fp32
before the first layer), the input smoothing (a per-feature divisor applied after it, whose
inverse the quantizer folded into the first layer's rows) and the head's state-independent
log-std (Gaussian policies).

Pixel policies (``input_shape`` set) read integer-coded observations, ``uint8 [batch, H, W, C]``,
whose value is ``code * input_scale``. Convolutions are NHWC with ``[kh, kw, in, out]`` kernels;
the first dense layer after them reads the flattened (row-major, channels-last) feature map.
An integer first layer takes the codes exactly: they are its unsigned activation codes, with the
fixed scale ``input_scale`` (no rounding), so uint8 frames stay uint8 up to the first matmul.

Integer kernels carry one float32 scale per output channel and travel bit-packed at the fewest
bits that hold their values (b bits for values in ``[-(2**(b-1) - 1), 2**(b-1) - 1]``, b = 2..8;
losslessly unpacked to int8 on arrival). So an int8 package is ~4x smaller than fp32, an int4
one ~8x. No pickle: plain bytes + msgpack.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib
from collections.abc import Sequence

import ml_dtypes
import msgpack
import numpy as np

from actorq.quantization.numerics import requantize_constants

MAGIC = b"AQPK"
# 2: integer kernels bit-packed ("bits" in their array entry); 3: "unsigned_activations" (a
# reader that ignored it would compute a different policy, so older readers must refuse);
# 4: the policy head (categorical, gaussian + log-std) and the observation normalizer.
# 5: convolution layers, and integer-coded (pixel) observations: input_shape, input_scale.
# 6: input_smoothing (a reader that ignored it would feed the first layer unscaled features), and
# affine_bits with per-layer input_range (the paper's simulated affine quantizer).
# 7: per-layer input_code_scale (static 8-bit codes between convolutions; a reader that ignored
# it would requantize dynamically and compute a different policy).
# 8: the gsde head (a reader that took its outputs for the mean would act on the features too).
FORMAT_VERSION = 8
READABLE_FORMATS = (1, 2, 3, 4, 5, 6, 7, 8)
PADDINGS = ("VALID",)
# What the network's outputs mean. deterministic: they are the actions (or Q-values); the
# agent's exploration acts on them. categorical: logits of a distribution actors sample from.
# gaussian: the mean of a diagonal Gaussian with the package's state-independent log-std.
# gsde: the mean, then the last hidden features that scale the noise (generalized
# state-dependent exploration; head_log_std is a [features, actions] matrix).
HEADS = ("deterministic", "categorical", "gaussian", "gsde")
# Normalized observations are clipped to this many standard deviations (as CleanRL's and SB3's
# observation normalization do); the learner clips with the same bound.
OBSERVATION_CLIP = 10.0
_DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "int8": np.dtype(np.int8),
}


class PackageError(ValueError):
    """A policy package is corrupt, truncated, or does not fit the network."""


def normalize_observations(observations: np.ndarray, mean: np.ndarray,
                           std: np.ndarray) -> np.ndarray:
    """``clip((observations - mean) / std, +-OBSERVATION_CLIP)`` in fp32: the observation
    normalizer that packages carry and learners train with."""
    z = (np.asarray(observations, np.float32) - mean) / std
    return np.clip(z, -OBSERVATION_CLIP, OBSERVATION_CLIP).astype(np.float32, copy=False)


def first_layer_inputs(observations: np.ndarray, extras: dict | None) -> np.ndarray:
    """Raw flat ``observations`` as the first layer of a package with ``extras`` (the
    learner's package fields: head, normalizer) reads them before any smoothing: normalized
    where ``extras`` carry a normalizer. What calibrating quantizers take."""
    observations = np.asarray(observations, np.float32)
    extras = extras or {}
    if extras.get("observation_mean") is None:
        return observations
    return normalize_observations(observations, extras["observation_mean"],
                                  extras["observation_std"])


@dataclasses.dataclass(frozen=True)
class DenseParams:
    """One dense layer of a packaged policy.

    Attributes:
      kernel: ``[in, out]``; float32/float16/bfloat16, or int8 holding b-bit integers.
      bias: ``[out]`` float32.
      kernel_scale: ``[out]`` float32 per-output-channel scale for integer kernels, else None.
      input_range: ``[lo, hi]`` float32, the static range of the layer's input in packages
        with ``affine_bits`` (None there: each sample's own range).
      input_code_scale: ``[1]`` float32, set on an integer layer that follows an integer
        convolution with a ReLU: its input is that convolution's output requantized to static
        unsigned 8-bit codes worth this much each (:func:`requantize_codes`), not quantized
        per sample. None: dynamic per-sample quantization.
    """

    kernel: np.ndarray
    bias: np.ndarray
    kernel_scale: np.ndarray | None = None
    input_range: np.ndarray | None = None
    input_code_scale: np.ndarray | None = None

    @property
    def is_integer(self) -> bool:
        return self.kernel.dtype == np.int8


@dataclasses.dataclass(frozen=True)
class ConvParams:
    """One 2-D convolution layer of a packaged policy (NHWC, ``VALID`` padding).

    Attributes:
      kernel: ``[kh, kw, in, out]``; float, or int8 holding b-bit integers.
      bias: ``[out]`` float32.
      kernel_scale: ``[out]`` float32 per-output-channel scale for integer kernels, else None.
      strides: ``(vertical, horizontal)``.
      padding: ``"VALID"`` (the only one: an integer layer's unsigned-code shift relies on every
        output seeing the whole kernel).
      input_range, input_code_scale: as :class:`DenseParams`'s.
    """

    kernel: np.ndarray
    bias: np.ndarray
    kernel_scale: np.ndarray | None = None
    strides: tuple[int, int] = (1, 1)
    padding: str = "VALID"
    input_range: np.ndarray | None = None
    input_code_scale: np.ndarray | None = None

    def __post_init__(self) -> None:
        if np.ndim(self.kernel) != 4:
            raise PackageError(f"a conv kernel is [kh, kw, in, out], got shape "
                               f"{np.shape(self.kernel)}")
        if self.padding not in PADDINGS:
            raise PackageError(f"unsupported conv padding {self.padding!r}; valid: "
                               f"{', '.join(PADDINGS)}")
        strides = tuple(int(s) for s in self.strides)
        if len(strides) != 2 or min(strides) < 1:
            raise PackageError(f"conv strides must be two positive ints, got {self.strides!r}")
        object.__setattr__(self, "strides", strides)

    @property
    def is_integer(self) -> bool:
        return self.kernel.dtype == np.int8

    def output_shape(self, input_shape: Sequence[int]) -> tuple[int, int, int]:
        """``(H, W, out)`` for an ``(H, W, in)`` input."""
        kh, kw = self.kernel.shape[:2]
        height, width = int(input_shape[0]), int(input_shape[1])
        if height < kh or width < kw:
            raise PackageError(f"a {kh}x{kw} convolution does not fit a {height}x{width} input")
        return ((height - kh) // self.strides[0] + 1, (width - kw) // self.strides[1] + 1,
                int(self.kernel.shape[3]))


LayerParams = DenseParams | ConvParams


@dataclasses.dataclass(frozen=True)
class PolicyPackage:
    """A versioned, already-quantized policy MLP.

    Attributes:
      quantizer: the spec of the quantizer that made it (e.g. ``"int8"``, ``"fp16"``).
      version: the learner's policy version (monotonic; experience is tagged with it).
      layers: the dense and conv layers, input to output (convolutions first).
      activation: hidden activation name; output_activation: applied to the last layer.
      activation_bits: bits of the dynamic per-row activation quantization before each integer
        matmul (None for float packages).
      unsigned_activations: integer layers fed by a ReLU quantize their (non-negative) input
        rows to unsigned codes ``[0, 2**b - 1]`` instead of ``[-(2**(b-1) - 1), 2**(b-1) - 1]``:
        twice the resolution where half of the signed grid is never used. The observation layer
        stays signed.
      input_shape: ``(H, W, C)`` of integer-coded pixel observations; None for flat float
        observations.
      input_scale: what one code of a pixel observation is worth (1/255 for frames).
      affine_bits: set by the paper's affine quantizer (``affine_int<b>``, simulated): every
        layer is float, with weights on a b-bit affine grid, and rounds its input to the b-bit
        affine grid of its ``input_range`` before its matmul
        (:func:`actorq.quantization.numerics.affine_fake_quant`).
      input_smoothing: ``[features]`` positive fp32 divisors applied to the (normalized)
        observation before the first layer; the first kernel's rows were multiplied by them
        before quantization, so the network is the same function with balanced input ranges
        (SmoothQuant's migration, see ``actorq.quantization.recipe``). Flat observations only.
    """

    quantizer: str
    version: int
    layers: tuple[LayerParams, ...]
    activation: str = "relu"
    output_activation: str = "none"
    activation_bits: int | None = None
    unsigned_activations: bool = False
    head: str = "deterministic"
    head_log_std: np.ndarray | None = None
    observation_mean: np.ndarray | None = None
    observation_std: np.ndarray | None = None
    input_shape: tuple[int, ...] | None = None
    input_scale: float | None = None
    input_smoothing: np.ndarray | None = None
    affine_bits: int | None = None

    def __post_init__(self) -> None:
        if (self.input_shape is None) != (self.input_scale is None):
            raise PackageError("pixel observations need both input_shape and input_scale")
        if self.input_shape is not None:
            object.__setattr__(self, "input_shape", tuple(int(v) for v in self.input_shape))
            object.__setattr__(self, "input_scale", float(self.input_scale))
            if self.observation_mean is not None:
                raise PackageError("pixel observations have no observation normalizer")
        convs = [isinstance(layer, ConvParams) for layer in self.layers]
        if any(convs) and self.input_shape is None:
            raise PackageError("conv layers need an input_shape")
        if convs != sorted(convs, reverse=True) or (convs and convs[-1]):
            raise PackageError("conv layers must come before the dense layers, which end it")
        if self.input_shape is not None:
            self.layer_input_shapes()  # raises PackageError if the layers do not chain
        if self.unsigned_activations and self.activation != "relu":
            raise PackageError(
                f"unsigned activations need ReLU hidden layers, got {self.activation!r}"
            )
        if self.head not in HEADS:
            raise PackageError(f"unknown policy head {self.head!r}; valid: {', '.join(HEADS)}")
        if (self.head in ("gaussian", "gsde")) != (self.head_log_std is not None):
            raise PackageError("a gaussian or gsde head needs head_log_std, and only they have "
                               "one")
        if self.head == "gsde":
            self._check_gsde()
        if (self.observation_mean is None) != (self.observation_std is None):
            raise PackageError("the observation normalizer needs both mean and std")
        if self.affine_bits is not None and (
                not 2 <= self.affine_bits <= 8 or self.activation_bits is not None
                or any(layer.kernel_scale is not None for layer in self.layers)):
            raise PackageError("affine_bits (2..8) go with float layers and no activation_bits")
        for i, layer in enumerate(self.layers):
            if layer.input_range is None:
                continue
            bounds = np.asarray(layer.input_range)
            if self.affine_bits is None or bounds.shape != (2,) or not bounds[0] <= bounds[1]:
                raise PackageError(f"layer {i}: input_range is [lo <= hi], in affine packages "
                                   f"only; got {bounds!r}")
        for i, layer in enumerate(self.layers):
            if layer.input_code_scale is not None:
                self._check_code_scale(i, layer.input_code_scale)
        if self.input_smoothing is not None:
            if self.input_shape is not None:
                raise PackageError("pixel observations have no input smoothing")
            smoothing = np.asarray(self.input_smoothing)
            if smoothing.shape != (self.input_size,) or not np.all(smoothing > 0):
                raise PackageError(f"input_smoothing must be {self.input_size} positive "
                                   f"divisors, got shape {smoothing.shape}")

    def _check_gsde(self) -> None:
        """The outputs are ``actions`` means then the ``features`` the last layer reads, passed
        through an identity block."""
        shape = np.shape(self.head_log_std)
        last = self.layers[-1]
        if (len(shape) != 2 or isinstance(last, ConvParams)
                or shape[0] != last.kernel.shape[0] or sum(shape) != self.output_size):
            raise PackageError(f"a gsde head's log_std is [features, actions] with features the "
                               f"last layer's {last.kernel.shape[0]} inputs and features + "
                               f"actions its {self.output_size} outputs; got shape {shape}")

    def _check_code_scale(self, index: int, scale: np.ndarray) -> None:
        previous = self.layers[index - 1] if index > 0 else None
        if not (isinstance(previous, ConvParams) and previous.is_integer
                and self.layers[index].is_integer and self.activation == "relu"
                and self.activation_bits == 8 and not self.unsigned_activations):
            raise PackageError(f"layer {index}: input_code_scale needs an integer layer after an "
                               "integer convolution, ReLU hidden layers and 8-bit signed "
                               "activations")
        # The requantizing convolution must itself read static codes (pixels or static codes),
        # so that its multiplier is a constant.
        if not ((index == 1 and self.pixels) or previous.input_code_scale is not None):
            raise PackageError(f"layer {index}: input_code_scale needs the convolution before it "
                               "to read static codes (pixel codes or an input_code_scale)")
        scale = np.asarray(scale)
        if scale.shape != (1,) or not (np.isfinite(scale[0]) and scale[0] > 0):
            raise PackageError(f"layer {index}: input_code_scale must be one positive float, "
                               f"got {scale!r}")

    def requantize_constants(self, index: int) -> tuple[np.ndarray, np.ndarray] | None:
        """For integer layer ``index`` whose output the next layer reads as static codes: the
        ``(bias_codes, multiplier)`` of :func:`~actorq.quantization.numerics.requantize_codes`
        (every runtime uses these same arrays); else None."""
        if index + 1 >= len(self.layers) or self.layers[index + 1].input_code_scale is None:
            return None
        layer = self.layers[index]
        return requantize_constants(self.code_scales()[index], layer.kernel_scale, layer.bias,
                                    np.asarray(self.layers[index + 1].input_code_scale)[0])

    def code_scales(self) -> tuple[float | None, ...]:
        """Per layer, the static scale of its input codes, or None (dynamic quantization):
        ``input_scale`` for a pixel package's integer first layer, each layer's
        ``input_code_scale`` after it."""
        scales: list[float | None] = []
        for i, layer in enumerate(self.layers):
            if i == 0 and self.pixels and layer.is_integer:
                scales.append(float(self.input_scale))
            elif layer.input_code_scale is not None:
                scales.append(float(np.asarray(layer.input_code_scale)[0]))
            else:
                scales.append(None)
        return tuple(scales)

    def layer_input_shapes(self) -> list[tuple[int, ...]]:
        """Each layer's input shape per observation: ``(H, W, C)`` for conv layers, ``(features,)``
        for dense ones. Raises PackageError if the layers' shapes do not chain."""
        shape: tuple[int, ...] = self.input_shape or (int(self.layers[0].kernel.shape[0]),)
        shapes = []
        for i, layer in enumerate(self.layers):
            if isinstance(layer, ConvParams):
                if len(shape) != 3 or shape[2] != layer.kernel.shape[2]:
                    raise PackageError(f"layer {i}: a conv with {layer.kernel.shape[2]} input "
                                       f"channels cannot read shape {shape}")
                shapes.append(shape)
                shape = layer.output_shape(shape)
            else:
                flat = int(np.prod(shape))
                if flat != layer.kernel.shape[0]:
                    raise PackageError(f"layer {i}: a dense layer with {layer.kernel.shape[0]} "
                                       f"inputs cannot read {flat} features")
                shapes.append((flat,))
                shape = (int(layer.kernel.shape[1]),)
        return shapes

    @property
    def stochastic(self) -> bool:
        """Whether actors sample their actions from the package's head (and can report the
        behaviour log-probability)."""
        return self.head != "deterministic"

    @property
    def pixels(self) -> bool:
        """Whether the package reads integer-coded ``uint8 [batch, H, W, C]`` observations."""
        return self.input_shape is not None

    def network_input(self, observations: np.ndarray) -> np.ndarray:
        """What the float network that this package quantizes reads: :meth:`prepare` without
        the input smoothing, which the package folds into its first kernel (the float
        network on smoothed inputs is a different function)."""
        return self.prepare(observations, smoothed=False)

    def prepare(self, observations: np.ndarray, smoothed: bool = True) -> np.ndarray:
        """What a runtime feeds its network: ``uint8 [batch, H, W, C]`` codes for pixel
        packages (integers outside ``[0, 255]`` raise ValueError), else ``float32 [batch,
        features]`` through :meth:`normalize`."""
        observations = np.asarray(observations)
        if not self.pixels:
            batch = observations.reshape(observations.shape[0], -1)
            return self.normalize(batch.astype(np.float32, copy=False), smoothed=smoothed)
        if observations.shape[1:] != self.input_shape:
            raise PackageError(f"policy package reads observations of shape {self.input_shape}, "
                               f"got {observations.shape[1:]}")
        if observations.dtype != np.uint8:
            if observations.dtype.kind not in "biu" or (
                    observations.size and (observations.min() < 0 or observations.max() > 255)):
                raise ValueError("pixel observations must be integer codes in [0, 255], got "
                                 f"dtype {observations.dtype}")
            observations = observations.astype(np.uint8)
        return np.ascontiguousarray(observations)

    def normalize(self, observations: np.ndarray, smoothed: bool = True) -> np.ndarray:
        """What the first layer reads, in fp32 (every runtime applies it before that layer):
        :func:`normalize_observations` with the package's normalizer, if any, then divided by
        ``input_smoothing``, if any (and ``smoothed``)."""
        if self.observation_mean is not None:
            observations = normalize_observations(observations, self.observation_mean,
                                                  self.observation_std)
        if smoothed and self.input_smoothing is not None:
            observations = (observations / self.input_smoothing).astype(np.float32, copy=False)
        return observations

    def unsigned_input(self, index: int) -> bool:
        """Whether integer layer ``index`` quantizes its input rows as unsigned codes."""
        return self.unsigned_activations and index > 0 and self.activation == "relu"

    @property
    def input_size(self) -> int:
        """Features per observation (``H * W * C`` for pixel packages)."""
        if self.input_shape is not None:
            return int(np.prod(self.input_shape))
        return int(self.layers[0].kernel.shape[0])

    @property
    def output_size(self) -> int:
        return int(self.layers[-1].kernel.shape[1])

    @property
    def nbytes(self) -> int:
        """Bytes of array payload (weights, biases, scales, head and normalizer)."""
        total = sum(a.nbytes for a in (self.head_log_std, self.observation_mean,
                                       self.observation_std, self.input_smoothing)
                    if a is not None)
        for layer in self.layers:
            total += layer.kernel.nbytes + layer.bias.nbytes
            total += sum(a.nbytes for a in (layer.kernel_scale, layer.input_range,
                                            layer.input_code_scale) if a is not None)
        return total

    def check_compatible(self, input_size: int, output_size: int) -> None:
        """Raises PackageError unless the package maps ``input_size`` -> ``output_size``."""
        if (self.input_size, self.output_size) != (input_size, output_size):
            raise PackageError(
                f"policy package maps {self.input_size} -> {self.output_size} features but the "
                f"actor's environment needs {input_size} -> {output_size}"
            )

    def to_bytes(self) -> bytes:
        """Packs the package into one buffer (see the module docstring)."""
        payload = bytearray()
        layer_headers = []
        for layer in self.layers:
            entry = {}
            if isinstance(layer, ConvParams):
                entry["conv"] = {"strides": list(layer.strides), "padding": layer.padding}
            for field in ("kernel", "bias", "kernel_scale", "input_range", "input_code_scale"):
                array = getattr(layer, field)
                if array is None:
                    continue
                array = np.ascontiguousarray(array)
                meta = {"dtype": _dtype_name(array.dtype), "shape": list(array.shape),
                        "offset": len(payload)}
                data = array.tobytes()
                if array.dtype == np.int8:
                    bits = stored_bits(array)
                    if bits < 8:
                        data = pack_bits(array, bits)
                        meta["bits"] = bits
                meta["nbytes"] = len(data)
                entry[field] = meta
                payload += data
            layer_headers.append(entry)
        extras = {}
        for field in ("head_log_std", "observation_mean", "observation_std", "input_smoothing"):
            array = getattr(self, field)
            if array is None:
                continue
            array = np.ascontiguousarray(array, dtype=np.float32)
            extras[field] = {"dtype": "float32", "shape": list(array.shape),
                             "offset": len(payload), "nbytes": array.nbytes}
            payload += array.tobytes()
        header = msgpack.packb(
            {
                "format": FORMAT_VERSION,
                "quantizer": self.quantizer,
                "version": int(self.version),
                "activation": self.activation,
                "output_activation": self.output_activation,
                "activation_bits": self.activation_bits,
                "unsigned_activations": bool(self.unsigned_activations),
                "head": self.head,
                "input_shape": None if self.input_shape is None else list(self.input_shape),
                "input_scale": self.input_scale,
                "affine_bits": self.affine_bits,
                "arrays": extras,
                "layers": layer_headers,
            }
        )
        body = MAGIC + struct.pack("<I", len(header)) + header + bytes(payload)
        return body + struct.pack("<I", zlib.crc32(body))

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> PolicyPackage:
        """Unpacks :meth:`to_bytes` output; raises PackageError on any corruption."""
        data = bytes(data)
        if len(data) < len(MAGIC) + 8 or data[: len(MAGIC)] != MAGIC:
            raise PackageError("not an actorq policy package (bad magic or too short)")
        body, (crc,) = data[:-4], struct.unpack("<I", data[-4:])
        if zlib.crc32(body) != crc:
            raise PackageError("policy package checksum mismatch: corrupt or truncated bytes")
        (header_len,) = struct.unpack("<I", body[4:8])
        try:
            header = msgpack.unpackb(body[8 : 8 + header_len])
            if header["format"] not in READABLE_FORMATS:
                raise PackageError(f"unsupported package format {header['format']}")
            payload = memoryview(body)[8 + header_len :]
            layers = []
            for entry in header["layers"]:
                conv = entry.get("conv")
                arrays = {
                    field: _read_array(payload, meta) for field, meta in entry.items()
                    if field != "conv"
                }
                if conv is None:
                    layers.append(DenseParams(**arrays))
                else:
                    layers.append(ConvParams(**arrays, strides=tuple(conv["strides"]),
                                             padding=conv["padding"]))
            extras = {field: _read_array(payload, meta)
                      for field, meta in header.get("arrays", {}).items()}
            return cls(
                quantizer=header["quantizer"],
                version=header["version"],
                layers=tuple(layers),
                activation=header["activation"],
                output_activation=header["output_activation"],
                activation_bits=header["activation_bits"],
                unsigned_activations=bool(header.get("unsigned_activations", False)),
                head=header.get("head", "deterministic"),
                input_shape=header.get("input_shape"),
                input_scale=header.get("input_scale"),
                affine_bits=header.get("affine_bits"),
                **extras,
            )
        except PackageError:
            raise
        except Exception as e:  # malformed header contents
            raise PackageError(f"malformed policy package header: {e}") from e


def _dtype_name(dtype: np.dtype) -> str:
    for name, known in _DTYPES.items():
        if dtype == known:
            return name
    raise PackageError(f"unsupported array dtype in a policy package: {dtype}")


def _read_array(payload: memoryview, meta: dict) -> np.ndarray:
    dtype = _DTYPES.get(meta["dtype"])
    if dtype is None:
        raise PackageError(f"unknown dtype {meta['dtype']!r} in policy package")
    start, nbytes = meta["offset"], meta["nbytes"]
    shape = tuple(meta["shape"])
    count = int(np.prod(shape))
    bits = meta.get("bits")
    if bits is not None:
        if dtype != np.int8 or not isinstance(bits, int) or not 2 <= bits <= 7:
            raise PackageError(f"bad bit width {bits!r} for a {meta['dtype']} array")
        expected = packed_nbytes(count, bits)
    else:
        expected = count * dtype.itemsize
    if start + nbytes > len(payload) or nbytes != expected:
        raise PackageError("policy package payload is truncated or inconsistent with its header")
    if bits is not None:
        return unpack_bits(payload[start : start + nbytes], count, bits).reshape(shape)
    # Copy so the array owns its memory (the buffer may be a shared-memory view).
    return np.frombuffer(payload[start : start + nbytes], dtype=dtype).reshape(shape).copy()


def stored_bits(values: np.ndarray) -> int:
    """The fewest bits b (2..8) whose symmetric range ``+-(2**(b-1) - 1)`` holds ``values``.

    -128 needs the full int8 range, so it reports 8 (stored unpacked)."""
    if values.size == 0:
        return 8
    low, high = int(values.min()), int(values.max())
    if low == -128:
        return 8
    return max(2, max(abs(low), abs(high)).bit_length() + 1)


def packed_nbytes(count: int, bits: int) -> int:
    """Bytes of ``count`` values packed at ``bits`` bits (groups of 8 values -> ``bits`` bytes)."""
    return -(-count // 8) * bits


def pack_bits(values: np.ndarray, bits: int) -> bytes:
    """Packs int8 ``values`` in ``+-(2**(bits-1) - 1)`` at ``bits`` bits each (2 <= bits <= 7).

    Each group of 8 values (offset to unsigned) fills the low ``8 * bits`` bits of a
    little-endian uint64, of which the low ``bits`` bytes are kept.
    """
    offset = 1 << (bits - 1)
    # int8 + offset wraps to the right uint8 (values are within +-(offset - 1)).
    unsigned = values.reshape(-1).view(np.uint8) + np.uint8(offset)
    pad = (-unsigned.size) % 8
    if pad:
        unsigned = np.concatenate([unsigned, np.full(pad, offset, np.uint8)])
    groups = unsigned.reshape(-1, 8)
    words = np.zeros(len(groups), np.dtype("<u8"))
    for j in range(8):
        words |= groups[:, j].astype(np.uint64) << np.uint64(bits * j)
    return words.view(np.uint8).reshape(-1, 8)[:, :bits].tobytes()


def unpack_bits(data: bytes | memoryview, count: int, bits: int) -> np.ndarray:
    """Inverse of :func:`pack_bits`: ``count`` int8 values."""
    raw = np.frombuffer(data, np.uint8).reshape(-1, bits)
    padded = np.zeros((len(raw), 8), np.uint8)
    padded[:, :bits] = raw
    words = padded.view(np.dtype("<u8")).reshape(-1)
    out = np.empty((len(words), 8), np.int8)
    mask, offset = np.uint64((1 << bits) - 1), np.uint8(1 << (bits - 1))
    unsigned = out.view(np.uint8)
    for j in range(8):
        # uint8 - offset wraps back to the int8 value's two's-complement byte.
        unsigned[:, j] = ((words >> np.uint64(bits * j)) & mask).astype(np.uint8) - offset
    return out.reshape(-1)[:count].copy()


def layers_from_arrays(kernels: Sequence[np.ndarray], biases: Sequence[np.ndarray]) -> tuple:
    """Convenience: float layers from parallel kernel/bias lists."""
    return tuple(DenseParams(np.asarray(k), np.asarray(b)) for k, b in zip(kernels, biases))
