"""Precision names, tree casting helpers and the switchboard of Björck et al.'s six fixes."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

PRECISIONS: tuple[str, ...] = ("fp32", "fp16", "bf16")

_DTYPES = {"fp32": jnp.float32, "fp16": jnp.float16, "bf16": jnp.bfloat16}


def dtype_of(name: str) -> jnp.dtype:
    """The JAX dtype for a precision name (one of :data:`PRECISIONS`)."""
    try:
        return jnp.dtype(_DTYPES[name])
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown precision {name!r}; valid names: {', '.join(PRECISIONS)}"
        ) from None


def _is_float_array(x: Any) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.floating)


def cast_tree(tree: Any, dtype: str | jnp.dtype | type) -> Any:
    """Casts every floating array leaf of ``tree`` to ``dtype``; other leaves are left alone.

    ``dtype`` is a precision name (``"fp16"``) or anything ``jnp.dtype`` accepts. Integer, bool
    and non-array leaves (step counters, flags, Python scalars) keep their type.
    """
    target = dtype_of(dtype) if isinstance(dtype, str) else jnp.dtype(dtype)
    return jax.tree.map(lambda x: x.astype(target) if _is_float_array(x) else x, tree)


def tree_bytes(tree: Any) -> int:
    """Total bytes of the array leaves of ``tree`` (anything with ``shape`` and ``dtype``)."""
    total = 0
    for leaf in jax.tree.leaves(tree):
        if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            total += math.prod(leaf.shape) * np.dtype(leaf.dtype).itemsize
    return total


FIX_NAMES: tuple[str, ...] = (
    "hadam",
    "loss_scaling",
    "softplus_fix",
    "normal_fix",
    "kahan_momentum",
    "kahan_gradients",
)


def _normalize(name: str) -> str:
    # The paper writes "hAdam", "softplus-fix", "Kahan-momentum": accept those spellings too.
    return name.strip().lower().replace("-", "_").replace(" ", "_")


@dataclasses.dataclass(frozen=True)
class LowpFixes:
    """Which of the six fixes (Björck et al. 2021, Table 1) are on."""

    hadam: bool = False
    loss_scaling: bool = False
    softplus_fix: bool = False
    normal_fix: bool = False
    kahan_momentum: bool = False
    kahan_gradients: bool = False

    @classmethod
    def all_on(cls) -> LowpFixes:
        """Every fix on: the configuration the paper trains fp16 SAC with."""
        return cls(**dict.fromkeys(FIX_NAMES, True))

    @classmethod
    def all_off(cls) -> LowpFixes:
        """Every fix off: naive low precision."""
        return cls()

    @classmethod
    def from_names(cls, names: str | Iterable[str]) -> LowpFixes:
        """Builds from ``"hadam,loss_scaling"``, a list of names, ``"all"`` or ``"none"``.

        Names are case-insensitive and ``-`` may stand for ``_`` (``"softplus-fix"``). An empty
        string or list means no fix. ``"all"`` and ``"none"`` must appear alone.
        """
        if isinstance(names, str):
            parts = [p for p in names.split(",") if p.strip()]
        else:
            parts = list(names)
            for p in parts:
                if not isinstance(p, str):
                    raise ValueError(f"fix names must be strings, got {p!r}")
        wanted = [_normalize(p) for p in parts]
        if "all" in wanted or "none" in wanted:
            if len(wanted) != 1:
                raise ValueError(f"'all' and 'none' must be used alone, got {names!r}")
            return cls.all_on() if wanted[0] == "all" else cls.all_off()
        unknown = [p for p, w in zip(parts, wanted) if w not in FIX_NAMES]
        if unknown:
            raise ValueError(
                f"unknown fix name(s) {unknown}; valid names: {', '.join(FIX_NAMES)}, "
                "or 'all' / 'none'"
            )
        return cls(**dict.fromkeys(wanted, True))

    def names(self) -> tuple[str, ...]:
        """The names of the fixes that are on, in canonical order."""
        return tuple(n for n in FIX_NAMES if getattr(self, n))
