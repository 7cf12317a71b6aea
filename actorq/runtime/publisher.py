"""Learner side of the weights channel: quantize once, publish versioned bytes."""

from __future__ import annotations

import threading
from typing import Any

from actorq.networks.mlp import MLP
from actorq.quantization.base import Quantizer


class InMemoryPublisher:
    """A VariableSource in the learner's own process (single-process runs and tests)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: tuple[int, bytes] | None = None

    def publish(self, version: int, data: bytes) -> None:
        with self._lock:
            self._latest = (version, data)

    def latest(self) -> tuple[int, bytes] | None:
        with self._lock:
            return self._latest


def package_policy(quantizer: Quantizer, params: Any, network: MLP, version: int) -> bytes:
    """Quantizes the learner's policy params into package bytes for broadcast."""
    return quantizer.quantize(params, network, version).to_bytes()
