"""What the inference benchmarks share: interleaved timing and the library versions measured.

Imports nothing heavy at module level (benchmarks set their thread environment before numpy or
JAX are imported).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

LIBRARIES = ("jax", "onnxruntime", "onnx", "torch", "numpy")


def time_round_robin(calls: Mapping[Any, Callable[[Any], Any]], x: Any, repeats: int,
                     iters: int, min_time: float) -> dict:
    """Median wall / process-CPU ms per call of each callable, interleaved across callables.

    Each callable is warmed up, then timed ``repeats`` times in one round-robin (so machine-load
    drift hits all of them alike); a timing is ``iters`` calls, or with ``iters=0`` as many as
    take about ``min_time`` seconds (1..2000). Process CPU time counts every thread (XLA runs its
    computations on its own threads). Returns ``{key: {"ms", "cpu_ms", "min_ms", "iters"}}``.
    """
    import numpy as np

    counts = {}
    for key, fn in calls.items():  # warm-up, then calibrate the calls per timing
        fn(x)
        start = time.perf_counter()
        fn(x)
        fn(x)
        per_call = (time.perf_counter() - start) / 2
        counts[key] = iters or max(1, min(2000, int(min_time / max(per_call, 1e-6))))
    wall = {key: [] for key in calls}
    cpu = {key: [] for key in calls}
    for _ in range(repeats):
        for key, fn in calls.items():
            n = counts[key]
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(n):
                fn(x)
            t1, c1 = time.perf_counter(), time.process_time()
            wall[key].append((t1 - t0) / n * 1e3)
            cpu[key].append((c1 - c0) / n * 1e3)
    return {
        key: {
            "ms": float(np.median(wall[key])),
            "cpu_ms": float(np.median(cpu[key])),
            "min_ms": float(np.min(wall[key])),
            "iters": counts[key],
        }
        for key in calls
    }


def library_versions(modules: Iterable[str] = LIBRARIES) -> dict[str, str | None]:
    """``{module: __version__}`` of the libraries a timing depends on (None if not installed)."""
    versions: dict[str, str | None] = {}
    for module in modules:
        try:
            versions[module] = __import__(module).__version__
        except ImportError:
            versions[module] = None
    return versions
