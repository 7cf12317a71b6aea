"""The admissible range of every numeric setting, declared once beside its default.

A config class (or the experiment config) keeps a table ``{field: Bounds(...)}``; one call checks
every field against it, so a negative budget, a zero batch or a NaN learning rate is refused
before anything runs, with a message that names the field, the value and what is allowed.
Every numeric field must appear in its table (tests check this), so the table is also the
documentation of what each field accepts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Bounds:
    """``low <= value <= high`` (``low < value`` with ``low_open``; ``value < high`` with
    ``high_open``); ``integer``: whole numbers only; ``optional``: None is allowed (the
    field's "off"); ``sequence``: a tuple/list whose every element obeys the bounds (hidden
    sizes), non-empty. Floats must always be finite."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    optional: bool = False
    sequence: bool = False

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a finite number"
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {self.high:g}")
        text = kind + (" " + " and ".join(parts) if parts else "")
        if self.sequence:
            text = f"a non-empty list of {text.removeprefix('an ').removeprefix('a ')}s"
        return text + (" or None" if self.optional else "")

    def admits(self, value: Any) -> bool:
        """Whether ``value`` is in range (and of the right kind)."""
        if value is None:
            return self.optional
        if self.sequence:
            return (isinstance(value, (tuple, list)) and len(value) > 0
                    and all(dataclasses.replace(self, sequence=False, optional=False).admits(v)
                            for v in value))
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.integer and not (isinstance(value, int) or float(value).is_integer()):
            return False
        if not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return not (self.high is not None
                    and (value >= self.high if self.high_open else value > self.high))


# The shapes that recur.
POSITIVE_INT = Bounds(low=1, integer=True)
NON_NEGATIVE_INT = Bounds(low=0, integer=True)
POSITIVE = Bounds(low=0, low_open=True)
NON_NEGATIVE = Bounds(low=0)
FRACTION = Bounds(low=0, high=1)
FINITE = Bounds()
LAYER_SIZES = Bounds(low=1, integer=True, sequence=True)
QAT_BITS = Bounds(low=2, high=8, integer=True, optional=True)


def check_bounds(values: Mapping[str, Any] | Any, table: Mapping[str, Bounds],
                 prefix: str = "") -> None:
    """Raises ValueError naming every field of ``values`` (a mapping or an object with those
    attributes) that its bounds in ``table`` do not admit."""
    bad = []
    for name, bounds in table.items():
        value = values[name] if isinstance(values, Mapping) else getattr(values, name)
        if not bounds.admits(value):
            bad.append(f"{prefix}{name}={value!r} (must be {bounds.describe()})")
    if bad:
        raise ValueError("bad config value" + ("s" if len(bad) > 1 else "") + ": "
                         + "; ".join(bad))


def numeric_fields(cls: type) -> list[str]:
    """The fields of dataclass ``cls`` whose default is a number, a number list or None (the
    ones a bounds table must cover)."""
    out = []
    for f in dataclasses.fields(cls):
        default = f.default
        if isinstance(default, (bool, str)):
            continue
        if default is None or isinstance(default, (int, float, tuple, list)):
            out.append(f.name)
    return out
