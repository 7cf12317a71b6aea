"""Metrics: experiment loggers, carbon/energy tracking and progress bars.

``actorq.metrics.carbon`` (which pulls in codecarbon and pandas) is loaded on first use of
``CarbonTracker`` / ``EnergyReport`` so that importing the loggers stays cheap in actors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actorq.lazy_exports import lazy_getattr
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


__getattr__ = lazy_getattr(__name__, _LAZY)
