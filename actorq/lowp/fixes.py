"""The switchboard of Björck et al.'s six fixes, importable without JAX (configs and actor
processes parse fix names too)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

PRECISIONS: tuple[str, ...] = ("fp32", "fp16", "bf16")

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


# The fixes that act on the optimizer alone: they apply to any learner (the other three need a
# Gaussian policy or Polyak-averaged targets).
OPTIMIZER_FIXES: tuple[str, ...] = ("hadam", "loss_scaling", "kahan_gradients")


def check_learner_precision(precision: str, lowp_fixes: str, loss_scale_init: float,
                            loss_scale_increase_every: int) -> None:
    """Raises ValueError, naming the valid choices, on a learner's bad precision settings."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
    LowpFixes.from_names(lowp_fixes)  # fails on an unknown name
    if loss_scale_init <= 0 or loss_scale_increase_every < 1:
        raise ValueError("loss_scale_init must be > 0 and loss_scale_increase_every >= 1")


def fixes_in_effect(precision: str, lowp_fixes: str,
                    applicable: tuple[str, ...] = OPTIMIZER_FIXES) -> tuple[str, ...]:
    """The fixes of ``lowp_fixes`` that a learner in ``precision`` uses: those in
    ``applicable``, none in fp32."""
    if precision == "fp32":
        return ()
    return tuple(n for n in LowpFixes.from_names(lowp_fixes).names() if n in applicable)
