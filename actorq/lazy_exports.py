"""The one lazy-import mechanism: names that import their module on first access (PEP 562).

Actor processes import ``actorq.quantization``, ``actorq.networks``, the agent packages and the
runtime table for a few light names; the heavy ones (JAX, Flax, AQT, ONNX Runtime, codecarbon
behind them) load only when someone asks.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def import_attribute(module: str, name: str) -> Any:
    """``module.name``, importing ``module`` now (for tables that name what they load later)."""
    return getattr(importlib.import_module(module), name)


def lazy_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving ``exports`` (attribute name -> defining module)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return import_attribute(module, name)

    return __getattr__
