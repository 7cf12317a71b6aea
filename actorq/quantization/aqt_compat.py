"""Compatibility shim: aqtp 0.9.0 on jax >= 0.10.

aqtp 0.9.0's linen integration (``aqt_flax_dg_core``) calls ``jax.core.get_aval`` when a layer
holds calibration state (static-range QAT/PTQ). jax 0.10 removed that function in favour of
``jax.typeof``, which returns the same abstract value. We restore the old name instead of pinning
jax < 0.10, because everything else in the stack wants a current jax. Remove this file once an
aqtp release stops calling ``get_aval`` (tests/test_quantization.py covers it).
"""

from __future__ import annotations

import jax
import jax.core


def install() -> bool:
    """Restores ``jax.core.get_aval`` if it is missing. Returns whether the shim was installed."""
    if hasattr(jax.core, "get_aval"):
        return False
    jax.core.get_aval = jax.typeof  # type: ignore[attr-defined]
    return True


SHIM_INSTALLED = install()
