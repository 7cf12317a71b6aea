"""The policy package: what the learner broadcasts and an actor runs.

One self-describing byte buffer::

    b"AQPK" | u32 header length | msgpack header | array payload | u32 crc32(all before)

The header names the quantizer, the policy version, the activations and, per dense layer, the
dtype/shape/offset of each array. Integer kernels travel as int8 with one float32 scale per
output channel, so an int8 package is ~4x smaller than fp32. No pickle: plain bytes + msgpack.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib
from collections.abc import Sequence

import ml_dtypes
import msgpack
import numpy as np

MAGIC = b"AQPK"
FORMAT_VERSION = 1
_DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "int8": np.dtype(np.int8),
}


class PackageError(ValueError):
    """A policy package is corrupt, truncated, or does not fit the network."""


@dataclasses.dataclass(frozen=True)
class DenseParams:
    """One dense layer of a packaged policy.

    Attributes:
      kernel: ``[in, out]``; float32/float16/bfloat16, or int8 holding b-bit integers.
      bias: ``[out]`` float32.
      kernel_scale: ``[out]`` float32 per-output-channel scale for integer kernels, else None.
    """

    kernel: np.ndarray
    bias: np.ndarray
    kernel_scale: np.ndarray | None = None

    @property
    def is_integer(self) -> bool:
        return self.kernel.dtype == np.int8


@dataclasses.dataclass(frozen=True)
class PolicyPackage:
    """A versioned, already-quantized policy MLP.

    Attributes:
      quantizer: the spec of the quantizer that made it (e.g. ``"int8"``, ``"fp16"``).
      version: the learner's policy version (monotonic; experience is tagged with it).
      layers: the dense layers, input to output.
      activation: hidden activation name; output_activation: applied to the last layer.
      activation_bits: bits of the dynamic per-row activation quantization before each integer
        matmul (None for float packages).
    """

    quantizer: str
    version: int
    layers: tuple[DenseParams, ...]
    activation: str = "relu"
    output_activation: str = "none"
    activation_bits: int | None = None

    @property
    def input_size(self) -> int:
        return int(self.layers[0].kernel.shape[0])

    @property
    def output_size(self) -> int:
        return int(self.layers[-1].kernel.shape[1])

    @property
    def nbytes(self) -> int:
        """Bytes of array payload (weights, biases, scales)."""
        total = 0
        for layer in self.layers:
            total += layer.kernel.nbytes + layer.bias.nbytes
            total += 0 if layer.kernel_scale is None else layer.kernel_scale.nbytes
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
            for field in ("kernel", "bias", "kernel_scale"):
                array = getattr(layer, field)
                if array is None:
                    continue
                array = np.ascontiguousarray(array)
                entry[field] = {
                    "dtype": _dtype_name(array.dtype),
                    "shape": list(array.shape),
                    "offset": len(payload),
                    "nbytes": array.nbytes,
                }
                payload += array.tobytes()
            layer_headers.append(entry)
        header = msgpack.packb(
            {
                "format": FORMAT_VERSION,
                "quantizer": self.quantizer,
                "version": int(self.version),
                "activation": self.activation,
                "output_activation": self.output_activation,
                "activation_bits": self.activation_bits,
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
            if header["format"] != FORMAT_VERSION:
                raise PackageError(f"unsupported package format {header['format']}")
            payload = memoryview(body)[8 + header_len :]
            layers = []
            for entry in header["layers"]:
                arrays = {
                    field: _read_array(payload, meta) for field, meta in entry.items()
                }
                layers.append(DenseParams(**arrays))
            return cls(
                quantizer=header["quantizer"],
                version=header["version"],
                layers=tuple(layers),
                activation=header["activation"],
                output_activation=header["output_activation"],
                activation_bits=header["activation_bits"],
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
    if start + nbytes > len(payload) or nbytes != int(np.prod(shape)) * dtype.itemsize:
        raise PackageError("policy package payload is truncated or inconsistent with its header")
    # Copy so the array owns its memory (the buffer may be a shared-memory view).
    return np.frombuffer(payload[start : start + nbytes], dtype=dtype).reshape(shape).copy()


def layers_from_arrays(kernels: Sequence[np.ndarray], biases: Sequence[np.ndarray]) -> tuple:
    """Convenience: float layers from parallel kernel/bias lists."""
    return tuple(DenseParams(np.asarray(k), np.asarray(b)) for k, b in zip(kernels, biases))
