"""Actor policy runtimes: run a policy package fast, with the reference numerics.

A runtime is selected by name (``actor_runtime`` in configs). ``xla`` and ``onnxruntime``
compute exactly what ``actorq.quantization.reference`` defines and differ only in speed; ``xla``
needs nothing beyond JAX and is the fallback (it imports JAX when it loads a package, so
actors on the ONNX Runtime runtimes never import it). ``onnxruntime_fused`` trades exactness for
ORT's fused dynamic-quantization kernel on int8 packages (per-tensor asymmetric activations:
~1e-3 from the reference on Gaussian inputs, but 1.2-1.5e-2 on real walker observations at
batch 1, and more when the rows of a batch differ widely in scale), so it is not the default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from actorq.lazy_exports import import_attribute
from actorq.quantization.package import PolicyPackage


class PolicyRuntime(Protocol):
    """Holds one loaded policy package and maps observations to network outputs."""

    name: str

    def load(self, package: PolicyPackage) -> None:
        """Makes ``package`` the policy that subsequent calls run."""
        ...

    def __call__(self, observations: np.ndarray) -> np.ndarray:
        """``[batch, obs_dim]`` float32 -> ``[batch, out_dim]`` float32 (raw observations: the
        package's normalizer, if any, is applied first, in fp32). Pixel packages take integer
        codes ``[batch, H, W, C]`` (uint8), as :meth:`PolicyPackage.prepare` describes."""
        ...


class XlaRuntime:
    """JAX/XLA runtime.

    XLA:CPU lowers an int8 matrix-*vector* product (one row) to a convert of the whole weight
    matrix to int32 plus a scalar loop (~13x slower than fp32); from two rows up it uses its fast
    int8 kernel. So single observations are padded to two rows for integer packages.
    """

    name = "xla"
    MIN_INT_ROWS = 2

    def __init__(self) -> None:
        self._package: PolicyPackage | None = None
        self._arrays = None
        self._fn: Callable | None = None
        self._signature: tuple | None = None

    def load(self, package: PolicyPackage) -> None:
        # JAX is imported here, not at module level: actors on the ONNX Runtime runtimes never
        # import it (smaller, faster-starting actor processes).
        import jax

        from actorq.quantization.reference import (
            package_arrays,
            package_forward,
            package_geometry,
        )

        signature = (
            package.activation,
            package.output_activation,
            package.activation_bits,
            package.unsigned_activations,
            package.input_shape,
            package.input_scale,
            package_geometry(package),
            tuple((layer.kernel.shape, str(layer.kernel.dtype)) for layer in package.layers),
        )
        if signature != self._signature:  # recompile only when the network itself changes
            self._fn = jax.jit(package_forward(package))
            self._signature = signature
        self._arrays = jax.device_put(package_arrays(package))
        self._package = package

    def padded_rows(self, batch: int) -> int:
        """Rows actually computed for a call with ``batch`` observations."""
        if self._package is not None and self._package.activation_bits is not None:
            return max(batch, self.MIN_INT_ROWS)
        return batch

    def lower(self, batch: int):
        """The lowered computation for ``batch`` observations (for inspection in tests)."""
        if self._package is None:
            raise RuntimeError("no policy package loaded")
        import jax
        import jax.numpy as jnp

        rows = self.padded_rows(batch)
        package = self._package
        if package.pixels:
            x = jax.ShapeDtypeStruct((rows, *package.input_shape), jnp.uint8)
        else:
            x = jax.ShapeDtypeStruct((rows, package.input_size), jnp.float32)
        return self._fn.lower(self._arrays, x)

    def __call__(self, observations: np.ndarray) -> np.ndarray:
        if self._package is None:
            raise RuntimeError("no policy package loaded")
        observations = self._package.prepare(observations)
        batch = observations.shape[0]
        rows = self.padded_rows(batch)
        if rows != batch:
            padding = np.zeros((rows - batch, *observations.shape[1:]), observations.dtype)
            observations = np.concatenate([observations, padding])
        return np.asarray(self._fn(self._arrays, observations))[:batch]


# Runtime name -> (module, class). Classes load on first use: onnxruntime is imported only by
# actors that ask for it, and JAX only by the xla runtime's ``load``.
_RUNTIMES: dict[str, tuple[str, str]] = {
    "xla": (__name__, "XlaRuntime"),
    "onnxruntime": ("actorq.runtime.onnx_runtime", "OnnxRuntime"),
    # ORT's fused DynamicQuantizeMatMul for int8: per-tensor activation quantization, so close to
    # but not exactly the reference numerics; other packages run the exact onnxruntime graph.
    "onnxruntime_fused": ("actorq.runtime.onnx_runtime", "FusedOnnxRuntime"),
}


def register_runtime(name: str, module: str, class_name: str) -> None:
    """Registers the actor runtime class ``module.class_name`` under ``name`` (imported when
    first built, so registering costs nothing)."""
    _RUNTIMES[name] = (module, class_name)


def available_runtimes() -> list[str]:
    """Names accepted by :func:`make_policy_runtime`."""
    return sorted(_RUNTIMES)


def make_policy_runtime(name: str = "xla") -> PolicyRuntime:
    """Builds the runtime ``name``; unknown names raise ValueError listing valid ones."""
    if name not in _RUNTIMES:
        valid = ", ".join(available_runtimes())
        raise ValueError(f"unknown actor runtime {name!r}; valid: {valid}")
    return import_attribute(*_RUNTIMES[name])()
