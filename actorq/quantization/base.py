"""The Quantizer protocol: learner params -> compact, versioned policy package."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from actorq.networks.mlp import MLP
from actorq.quantization.package import PolicyPackage


@runtime_checkable
class Quantizer(Protocol):
    """Turns a full-precision policy MLP into the package that actors pull and run.

    Implementations must be deterministic (same params -> same bytes) and must not need the
    network's Python code on the actor side: the package is self-describing.
    """

    @property
    def spec(self) -> str:
        """The registry spec that makes this quantizer (e.g. ``"int8"``)."""
        ...

    def quantize(self, params: Any, network: MLP, version: int) -> PolicyPackage:
        """Packages ``network``'s ``params`` as policy ``version``."""
        ...


def checked_calibration(observations: Any, dtype: Any = None) -> np.ndarray:
    """``observations`` as the ``[n, ...]`` array (n >= 1, all finite) that calibrating
    quantizers keep; raises ValueError naming what is wrong."""
    observations = np.asarray(observations, dtype)
    if observations.ndim < 2 or not len(observations):
        raise ValueError(f"calibration observations must be [n, ...] with n >= 1, got shape "
                         f"{observations.shape}")
    if not np.all(np.isfinite(observations)):
        raise ValueError("calibration observations contain NaN or inf")
    return observations
