"""Quantizers: learner params -> versioned policy packages that actors deserialize and run.

Built-ins: ``fp32``, ``fp16``, ``bf16``, ``int8`` (AQT numerics, real int8 matmul) and
``int2``..``int8`` (same numerics, fewer bits, for PTQ/QAT studies), ``fp32in_int2``..``8``
(the same with an fp32 first layer), ``fp32head_int<b>`` (fp32 output layer), ``uact_int<b>`` and
``fp32head_uact_int<b>`` (unsigned activation codes after each ReLU) and ``int8_p999``. Add one with
:func:`register_quantizer` (see ``actorq/quantization/percentile.py`` for a one-file example).
"""

from actorq.lazy_exports import lazy_getattr
from actorq.quantization.package import DenseParams, PackageError, PolicyPackage

# Everything else loads on first use (PEP 562): an actor process that only deserializes and runs
# packages imports ``actorq.quantization.package`` and never pays for JAX, Flax or AQT.
_LAZY = {
    "Quantizer": "actorq.quantization.base",
    "FloatQuantizer": "actorq.quantization.builtin",
    "IntQuantizer": "actorq.quantization.builtin",
    "forward": "actorq.quantization.reference",
    "make_reference_forward": "actorq.quantization.reference",
    "package_arrays": "actorq.quantization.reference",
    "QATSchedule": "actorq.quantization.qat",
    "fake_quant_dot_general": "actorq.quantization.qat",
    "available_quantizers": "actorq.quantization.registry",
    "make_quantizer": "actorq.quantization.registry",
    "make_policy_quantizer": "actorq.quantization.registry",
    "register_quantizer": "actorq.quantization.registry",
}
__getattr__ = lazy_getattr(__name__, _LAZY)
__all__ = ["DenseParams", "PackageError", "PolicyPackage", *sorted(_LAZY)]
