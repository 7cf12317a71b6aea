"""Which machine a figure was measured on (machines of one kind differ up to 5x in speed)."""

from __future__ import annotations

import contextlib
import platform
import subprocess
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (cheap: no subprocess, no py-cpuinfo)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine_name() -> str:
    """``lscpu``'s model name, core count and L2/L3 sizes, e.g.
    ``"AMD EPYC, 2 cores, L2 cache 1 MiB (2 instances), L3 cache 32 MiB (1 instance)"``."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return cpu_model()
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = " ".join(value.split())
    parts = [fields.get("Model name") or cpu_model(), f"{fields.get('CPU(s)', '?')} cores"]
    parts += [f"{name} {fields[name]}" for name in ("L2 cache", "L3 cache") if name in fields]
    return ", ".join(parts)
