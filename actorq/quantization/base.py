"""The Quantizer protocol: learner params -> compact, versioned policy package."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

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
