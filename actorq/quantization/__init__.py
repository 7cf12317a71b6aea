"""Quantizers: learner params -> versioned policy packages that actors deserialize and run.

Built-ins: ``fp32``, ``fp16``, ``bf16``, ``int8`` (AQT numerics, real int8 matmul) and
``int2``..``int8`` (same numerics, fewer bits, for PTQ/QAT studies), ``fp32in_int2``..``8``
(the same with an fp32 first layer) and ``int8_p999``. Add one with
:func:`register_quantizer` (see ``actorq/quantization/percentile.py`` for a one-file example).
"""

from actorq.quantization import aqt_compat  # noqa: F401  (must precede any aqt linen use)
from actorq.quantization import builtin as _builtin  # noqa: F401  (registers built-ins)
from actorq.quantization import float_input as _float_input  # noqa: F401  (fp32in_int<b>)
from actorq.quantization import percentile as _percentile  # noqa: F401  (worked example)
from actorq.quantization.base import Quantizer
from actorq.quantization.builtin import FloatQuantizer, IntQuantizer
from actorq.quantization.forward import forward, make_reference_forward, package_arrays
from actorq.quantization.package import DenseParams, PackageError, PolicyPackage
from actorq.quantization.qat import QATSchedule, fake_quant_dot_general
from actorq.quantization.registry import available_quantizers, make_quantizer, register_quantizer

__all__ = [
    "DenseParams",
    "FloatQuantizer",
    "IntQuantizer",
    "PackageError",
    "PolicyPackage",
    "QATSchedule",
    "Quantizer",
    "available_quantizers",
    "fake_quant_dot_general",
    "forward",
    "make_quantizer",
    "make_reference_forward",
    "package_arrays",
    "register_quantizer",
]
