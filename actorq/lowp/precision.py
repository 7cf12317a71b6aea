"""Precision names and tree helpers (the fixes' switchboard is in :mod:`actorq.lowp.fixes`)."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from actorq.lowp.fixes import FIX_NAMES, PRECISIONS, LowpFixes

__all__ = ["FIX_NAMES", "PRECISIONS", "LowpFixes", "cast_tree", "dtype_of", "tree_bytes"]

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
