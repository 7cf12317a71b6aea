"""Quantizer registry: ``register_quantizer(name, factory)`` and ``make_quantizer(spec)``.

A spec is a registered name (``"fp16"``) or a parametric family name followed by an integer
(``"int4"`` -> the ``"int"`` family's factory called with 4).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

_FACTORIES: dict[str, Callable[[], Any]] = {}
_FAMILIES: dict[str, Callable[[int], Any]] = {}
_SPEC = re.compile(r"^([a-z][a-z0-9_]*?)(\d+)$")
# The modules whose import registers the shipped quantizers. They import JAX and AQT, so they
# load on the registry's first use rather than with the package.
BUILTIN_MODULES = (
    "actorq.quantization.builtin",
    "actorq.quantization.float_input",
    "actorq.quantization.float_head",
    "actorq.quantization.percentile",
    "actorq.quantization.unsigned_activations",
    "actorq.quantization.gptq",
    "actorq.quantization.recipe",
    "actorq.quantization.affine",
)
_builtins_loaded = False


def _ensure_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True  # first: the modules below call register_quantizer while importing
    for module in BUILTIN_MODULES:
        importlib.import_module(module)


def register_quantizer(
    name: str, factory: Callable[..., Any], *, parametric: bool = False, overwrite: bool = False
) -> None:
    """Registers a quantizer factory under ``name``.

    Args:
      name: the spec users write. Lower-case letters, digits and ``_``.
      factory: zero-argument callable returning a Quantizer (or one taking an int when
        ``parametric``).
      parametric: register a family: ``make_quantizer(f"{name}{n}")`` calls ``factory(n)``.
      overwrite: allow replacing an existing registration.
    """
    _ensure_builtins()
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"invalid quantizer name {name!r}: use lower-case letters, digits, _")
    table = _FAMILIES if parametric else _FACTORIES
    if name in table and not overwrite:
        raise ValueError(f"quantizer {name!r} is already registered")
    table[name] = factory


def available_quantizers() -> list[str]:
    """Registered specs; families are shown as ``name<N>``."""
    _ensure_builtins()
    return sorted(_FACTORIES) + sorted(f"{family}<N>" for family in _FAMILIES)


def make_quantizer(spec: str) -> Any:
    """Builds the quantizer for ``spec``; unknown specs raise ValueError listing valid ones."""
    if not isinstance(spec, str):
        raise ValueError(f"quantizer spec must be a string, got {type(spec).__name__}")
    _ensure_builtins()
    if spec in _FACTORIES:
        return _FACTORIES[spec]()
    match = _SPEC.match(spec)
    if match and match.group(1) in _FAMILIES:
        try:
            return _FAMILIES[match.group(1)](int(match.group(2)))
        except ValueError as e:
            raise ValueError(f"bad quantizer spec {spec!r}: {e}") from e
    raise ValueError(
        f"unknown quantizer {spec!r}; valid: {', '.join(available_quantizers())} "
        "(integer families take 2..8 bits, e.g. int4)"
    )


def make_policy_quantizer(spec: str, action_values: bool) -> Any:
    """The quantizer for ``spec`` as it packages one agent's policy.

    ``action_values``: the policy's outputs are action values whose argmax is the action
    (``Builder.action_value_head``). A quantizer with a variant for such heads
    (``for_action_values``: the int8 recipe keeps their output layer fp32) returns it.
    """
    quantizer = make_quantizer(spec)
    if action_values and hasattr(quantizer, "for_action_values"):
        quantizer = quantizer.for_action_values()
    return quantizer
