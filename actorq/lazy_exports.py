"""Package attributes that import their module on first access (PEP 562).

Actor processes import ``actorq.quantization``, ``actorq.networks`` and the agent packages for a
few light names; the heavy ones (JAX, Flax, AQT behind them) load only when someone asks.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving ``exports`` (attribute name -> defining module)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
