"""Metrics: experiment loggers, carbon/energy tracking and progress bars.

``actorq.metrics.carbon`` (which pulls in codecarbon and pandas) is loaded on first use of
``CarbonTracker`` / ``EnergyReport`` so that importing the loggers stays cheap in actors.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from actorq.metrics.loggers import (
    CSVLogger,
    JSONLLogger,
    Logger,
    MultiLogger,
    TensorBoardLogger,
    TerminalLogger,
    make_logger,
    read_jsonl,
)
from actorq.metrics.progress import Progress

if TYPE_CHECKING:
    from actorq.metrics.carbon import CarbonTracker, EnergyReport

__all__ = [
    "CSVLogger",
    "CarbonTracker",
    "EnergyReport",
    "JSONLLogger",
    "Logger",
    "MultiLogger",
    "Progress",
    "TensorBoardLogger",
    "TerminalLogger",
    "make_logger",
    "read_jsonl",
]

_LAZY = {"CarbonTracker": "actorq.metrics.carbon", "EnergyReport": "actorq.metrics.carbon"}


def __getattr__(name: str) -> Any:
    """Import carbon-tracking names on first access."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
