"""Array specs and item validation for replay tables."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class ArraySpec:
    """Shape and dtype of one field of a replay item (no batch dimension)."""

    shape: tuple[int, ...]
    dtype: np.dtype

    def __post_init__(self) -> None:
        # Normalise so that equality is exact: (3,) == [3], np.float32 == np.dtype('float32').
        shape = tuple(int(d) for d in self.shape)
        if any(d < 0 for d in shape):
            raise ValueError(f"ArraySpec shape must be non-negative, got {shape}")
        dtype = np.dtype(self.dtype)
        if dtype.hasobject:
            # Object arrays would need pickle to save; the table never stores them.
            raise ValueError(f"ArraySpec dtype must not be an object dtype, got {dtype}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dtype)

    @classmethod
    def from_array(cls, x: Any) -> ArraySpec:
        """Returns the spec (shape, dtype) of ``np.asarray(x)``."""
        arr = np.asarray(x)
        return cls(arr.shape, arr.dtype)

    def to_json(self) -> dict[str, Any]:
        """JSON-serialisable form (``dtype.str`` keeps byte order exactly)."""
        return {"shape": list(self.shape), "dtype": self.dtype.str}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ArraySpec:
        """Inverse of ``to_json``."""
        return cls(tuple(obj["shape"]), np.dtype(obj["dtype"]))

    def __str__(self) -> str:
        return f"shape {self.shape} dtype {self.dtype}"


def signature_from_example(example: Mapping[str, Any]) -> dict[str, ArraySpec]:
    """Builds a table signature from one example item (no batch dimension)."""
    return {name: ArraySpec.from_array(value) for name, value in example.items()}


def _describe(arr: np.ndarray) -> str:
    return f"shape {arr.shape} dtype {arr.dtype}"


def _check_fields(
    table: str, signature: Mapping[str, ArraySpec], item: Any, what: str
) -> None:
    if not isinstance(item, Mapping):
        raise TypeError(f"table {table!r}: {what} must be a mapping, got {type(item).__name__}")
    missing = sorted(set(signature) - set(item))
    extra = sorted(set(item) - set(signature), key=str)
    if missing or extra:
        raise ValueError(
            f"table {table!r}: {what} fields do not match the signature: missing {missing}, "
            f"unexpected {extra}; expected fields {sorted(signature)}"
        )


def validate_item(
    table: str, signature: Mapping[str, ArraySpec], item: Mapping[str, Any]
) -> dict[str, np.ndarray]:
    """Checks one item against ``signature`` and returns it as a dict of arrays.

    Raises ValueError (TypeError for a non-mapping) naming the field, expected vs got.
    """
    _check_fields(table, signature, item, "item")
    out: dict[str, np.ndarray] = {}
    for name, spec in signature.items():
        arr = np.asarray(item[name])
        if arr.shape != spec.shape or arr.dtype != spec.dtype:
            raise ValueError(
                f"table {table!r}: field {name!r}: expected {spec}, got {_describe(arr)}"
            )
        if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
            raise ValueError(
                f"table {table!r}: field {name!r}: expected finite values, got non-finite "
                f"(nan/inf) values"
            )
        out[name] = arr
    return out


def validate_batch(
    table: str, signature: Mapping[str, ArraySpec], items: Mapping[str, Any]
) -> tuple[dict[str, np.ndarray], int]:
    """Checks a batch (leading batch dimension on every field) and returns (arrays, batch size).

    The whole batch is checked before anything is returned, so callers can be all-or-nothing.
    """
    _check_fields(table, signature, items, "batch")
    arrays = {name: np.asarray(items[name]) for name in signature}
    sizes = {name: (arr.shape[0] if arr.ndim else None) for name, arr in arrays.items()}
    batch = next(iter(sizes.values()))
    for name, spec in signature.items():
        arr = arrays[name]
        expected = (batch,) + spec.shape
        if sizes[name] is None or arr.shape != expected or arr.dtype != spec.dtype:
            raise ValueError(
                f"table {table!r}: batch field {name!r}: expected shape {expected} (batch "
                f"{batch}) dtype {spec.dtype}, got {_describe(arr)}"
            )
    assert batch is not None
    if batch == 0:
        return arrays, 0
    for name, arr in arrays.items():
        if arr.dtype.kind in "fc":
            bad = ~np.isfinite(arr.reshape(batch, -1)).all(axis=1)
            if bad.any():
                raise ValueError(
                    f"table {table!r}: batch field {name!r}: expected finite values, got "
                    f"non-finite (nan/inf) values in batch element {int(np.flatnonzero(bad)[0])}"
                )
    return arrays, batch


def validate_priorities(table: str, priorities: Any, n: int) -> np.ndarray:
    """Returns ``priorities`` as a float64 vector of length n; raises if not finite and >= 0."""
    p = np.asarray(priorities, dtype=np.float64).reshape(-1)
    if p.shape != (n,):
        raise ValueError(f"table {table!r}: priorities: expected {n} values, got shape {p.shape}")
    bad = ~np.isfinite(p) | (p < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"table {table!r}: priority: expected a finite value >= 0, got {p[i]!r}"
            + (f" (element {i})" if n > 1 else "")
        )
    return p
