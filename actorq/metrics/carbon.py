"""Energy and carbon accounting around codecarbon's offline tracker.

Why a wrapper: codecarbon (3.3.2) swallows exceptions raised in its constructor, ``start()`` and
``stop()`` (its ``@suppress`` decorator logs them at WARNING and returns ``None``), silently uses a
world-average grid intensity for unknown countries, and on VMs without RAPL *estimates* CPU power
from load and a TDP. This module turns those silent modes into errors or explicit report fields:

* the country code is validated against codecarbon's energy-mix table at construction;
* a tracker that failed to build, start or stop raises ``RuntimeError`` carrying the swallowed
  exception;
* :attr:`EnergyReport.cpu_power_source` says whether CPU power was measured (RAPL, Power Gadget,
  Windows EMI, powermetrics, Raspberry Pi PMIC) or estimated (codecarbon's ``cpu_load`` or
  ``constant`` modes, i.e. a TDP times a load curve).

codecarbon is imported lazily so that ``import actorq.metrics`` stays cheap for actors.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from absl import logging as absl_logging

from actorq.metrics.machine import cpu_model

CpuPowerSource = Literal["measured", "estimated", "unknown", "disabled"]

__all__ = [
    "CarbonTracker",
    "CpuPowerSource",
    "EnergyReport",
    "classify_cpu_power_source",
    "country_grid_intensity_g_per_kwh",
    "supported_country_codes",
]

ENERGY_JSON = "energy.json"

# codecarbon CPU modes backed by a hardware energy counter vs. a model (TDP x load curve).
_MEASURED_CPU_MODES = frozenset({"intel_rapl", "intel_power_gadget", "windows_emi"})
_ESTIMATED_CPU_MODES = frozenset({"cpu_load", "constant"})

_CODECARBON_LOGGER = "codecarbon"


@dataclasses.dataclass(frozen=True)
class EnergyReport:
    """Energy and emissions of one tracked interval.

    Attributes:
      energy_kwh: total energy (CPU + GPU + RAM), kWh.
      emissions_kg: CO2-equivalent emissions, kg.
      duration_s: tracked duration in seconds (codecarbon's; excludes its hardware probe).
      country_iso_code: 3-letter ISO code used for the grid intensity.
      grid_intensity_g_per_kwh: emissions / energy in g/kWh (codecarbon's table value when no
        energy was recorded).
      cpu_power_source: 'measured' (hardware counter), 'estimated' (TDP and load model),
        'unknown' (no CPU in codecarbon's hardware list) or 'disabled' (tracking off).
      cpu_model: CPU brand string.
      cpu_tracking_method: codecarbon's CPU method in words, e.g. 'cpu_load, TDP 85 W (generic)'.
      cpu_energy_kwh, gpu_energy_kwh, ram_energy_kwh: the per-component split of energy_kwh.
    """

    energy_kwh: float
    emissions_kg: float
    duration_s: float
    country_iso_code: str
    grid_intensity_g_per_kwh: float
    cpu_power_source: CpuPowerSource
    cpu_model: str
    cpu_tracking_method: str = ""
    cpu_energy_kwh: float = 0.0
    gpu_energy_kwh: float = 0.0
    ram_energy_kwh: float = 0.0

    def to_dict(self) -> dict[str, float | str]:
        """Plain-Python dict (JSON-ready; also a valid logger row)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EnergyReport:
        """Inverse of :meth:`to_dict` (unknown keys are ignored, for forward compatibility)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> EnergyReport:
        """Read an ``energy.json`` written by :meth:`CarbonTracker.stop`."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def supported_country_codes() -> frozenset[str]:
    """ISO 3166-1 alpha-3 codes for which codecarbon has an offline energy mix."""
    from codecarbon.input import DataSource

    return frozenset(DataSource().get_global_energy_mix_data())


def country_grid_intensity_g_per_kwh(country_iso_code: str) -> float:
    """codecarbon's offline grid carbon intensity for a country, in gCO2e/kWh."""
    from codecarbon.input import DataSource

    mix = DataSource().get_global_energy_mix_data()
    code = country_iso_code.upper()
    if code not in mix:
        raise ValueError(f"codecarbon has no energy-mix data for country {country_iso_code!r}")
    try:
        # The exact conversion codecarbon applies (table value, or computed from the mix).
        from codecarbon.core.emissions import Emissions

        rate = Emissions._global_energy_mix_to_emissions_rate(mix[code])
        return float(rate.kgs_per_kWh) * 1000.0
    except (ImportError, AttributeError):  # private API moved: fall back to the table field
        return float(mix[code].get("carbon_intensity") or 0.0)


def classify_cpu_power_source(hardware: Sequence[object]) -> tuple[CpuPowerSource, str]:
    """Tell measured from estimated CPU power given codecarbon's ``tracker._hardware`` list.

    codecarbon 3.3.2 picks one CPU backend in ``ResourceTracker.set_CPU_tracking``: hardware
    counters (``CPU`` with mode ``intel_rapl`` / ``intel_power_gadget`` / ``windows_emi``,
    ``AppleSiliconChip`` via powermetrics, ``Raspberry`` via its PMIC) or, failing those, a
    model: ``CPU`` in mode ``cpu_load`` (TDP x load curve, psutil) or ``constant`` (TDP).
    Returns ``(source, method description)``.
    """
    for item in hardware:
        kind = type(item).__name__
        if kind == "CPU":
            mode = str(getattr(item, "_mode", ""))
            if mode in _MEASURED_CPU_MODES:
                return "measured", mode
            if mode in _ESTIMATED_CPU_MODES:
                tdp = getattr(item, "_tdp", None)
                return "estimated", f"{mode}, TDP {tdp} W{_tdp_note(item)}"
            return "unknown", mode or "unknown CPU mode"
        if kind == "AppleSiliconChip" and getattr(item, "chip_part", "") == "CPU":
            return "measured", "powermetrics"
        if kind == "Raspberry" and getattr(item, "chip_part", "") == "CPU":
            return "measured", "raspberry_pmic"
    return "unknown", "no CPU tracked"


@functools.lru_cache(maxsize=8)
def _tdp_known(cpu_model: str) -> bool:
    """Whether codecarbon's TDP table has ``cpu_model`` (a ~20 ms fuzzy match, cached)."""
    try:
        from codecarbon.core import cpu as cc_cpu

        tdp = cc_cpu.TDP.__new__(cc_cpu.TDP)  # skip __init__: it re-runs cpuinfo (~1 s)
        return tdp._get_cpu_power_from_registry(cpu_model) is not None
    except Exception:  # noqa: BLE001 - best-effort annotation only
        return True


def _tdp_note(cpu: object) -> str:
    # Unknown CPU models get a default TDP: 4 W per thread (codecarbon 3.3.2 with psutil), or
    # 85 W (POWER_CONSTANT, flagged by _is_generic_tdp). codecarbon's per-process hardware
    # cache rebuilds CPU objects without that flag, so re-check the table by model name.
    if getattr(cpu, "_is_generic_tdp", False):
        return " (codecarbon's generic default TDP)"
    model = getattr(cpu, "_model", None)
    if isinstance(model, str) and model and not _tdp_known(model):
        return " (CPU model not in codecarbon's TDP table: default per-thread TDP)"
    return ""


class _SwallowedErrors(logging.Filter):
    """Captures exceptions codecarbon logs instead of raising; shows only ERROR+ records."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            self.errors.append(f"{type(error).__name__}: {error}")
        elif record.levelno >= logging.ERROR:
            self.errors.append(record.getMessage())
        return record.levelno >= logging.ERROR


@contextlib.contextmanager
def _capture_codecarbon_errors() -> Iterator[_SwallowedErrors]:
    # codecarbon's @suppress logs at WARNING; open the logger to WARNING for the call, let the
    # filter keep the output at ERROR, then pin the level to ERROR (our log_level).
    cc_logger = logging.getLogger(_CODECARBON_LOGGER)
    capture = _SwallowedErrors()
    cc_logger.addFilter(capture)
    cc_logger.setLevel(logging.WARNING)
    try:
        yield capture
    finally:
        cc_logger.removeFilter(capture)
        cc_logger.setLevel(logging.ERROR)


class CarbonTracker:
    """Tracks energy and CO2 of a run with codecarbon's ``OfflineEmissionsTracker``.

    Offline (never touches the network), explicit country code, codecarbon's own CSV written to
    ``output_dir/emissions.csv`` and our :class:`EnergyReport` to ``output_dir/energy.json``.
    Usable as ``with CarbonTracker(run_dir) as tracker: ...`` (``tracker.report`` afterwards).

    Notes:
      * ``tracking_mode='machine'`` (default) attributes the whole machine's power to the run:
        use one tracker per machine, not one per actor process, or energy is counted N times.
      * The first ``start()`` in a process probes the hardware (about a second); later trackers
        reuse codecarbon's per-process cache.
    """

    def __init__(
        self,
        output_dir: str | os.PathLike[str],
        country_iso_code: str = "USA",
        enabled: bool = True,
        project_name: str = "actorq",
        *,
        measure_power_secs: float = 10.0,
        tracking_mode: Literal["machine", "process"] = "machine",
    ) -> None:
        """Build (but do not start) the tracker.

        Raises:
          ValueError: ``country_iso_code`` is not in codecarbon's offline data, or bad arguments.
          RuntimeError: codecarbon failed to build its tracker (it logs rather than raises).
        """
        if measure_power_secs <= 0:
            raise ValueError(f"measure_power_secs must be > 0, got {measure_power_secs}")
        if tracking_mode not in ("machine", "process"):
            raise ValueError(f"tracking_mode must be 'machine' or 'process', got {tracking_mode!r}")
        code = country_iso_code.strip().upper()
        supported = supported_country_codes()
        if code not in supported:
            # Without this check codecarbon silently falls back to a world average.
            raise ValueError(
                f"Unknown country ISO code {country_iso_code!r}: codecarbon's offline data has "
                f"{len(supported)} 3-letter codes, e.g. {', '.join(sorted(supported)[:8])}, ..."
            )
        self.output_dir = Path(output_dir)
        self.country_iso_code = code
        self.enabled = enabled
        self.project_name = project_name
        self._tracker: Any = None
        self._started_at: float | None = None
        self._report: EnergyReport | None = None
        if not enabled:
            return

        from codecarbon import OfflineEmissionsTracker
        from codecarbon.output_methods.base_output import OutputMethod

        self.output_dir.mkdir(parents=True, exist_ok=True)
        with _capture_codecarbon_errors() as capture:
            tracker = OfflineEmissionsTracker(
                country_iso_code=code,
                project_name=project_name,
                output_dir=str(self.output_dir),
                # The non-deprecated spelling of save_to_file=True: emissions.csv in output_dir.
                output_methods=[OutputMethod.CSV],
                measure_power_secs=measure_power_secs,
                tracking_mode=tracking_mode,
                # 'warning' only so that swallowed exceptions reach our filter; the filter and
                # the level pinned afterwards make the effective level 'error'.
                log_level="warning",
                # Several machines-worth of trackers may coexist (tests, sweeps); no lock file.
                allow_multiple_runs=True,
            )
        # A swallowed constructor exception leaves the object half-initialised.
        if any(not hasattr(tracker, attr) for attr in ("_output_handlers", "run_id", "_geo")):
            raise RuntimeError(
                "codecarbon failed to construct OfflineEmissionsTracker" + _describe(capture.errors)
            )
        self._tracker = tracker

    @property
    def report(self) -> EnergyReport | None:
        """The report of the last :meth:`stop`, or ``None``."""
        return self._report

    @property
    def running(self) -> bool:
        """Whether :meth:`start` was called without a matching :meth:`stop`."""
        return self._started_at is not None

    def start(self) -> None:
        """Start measuring (probes hardware on first use in a process)."""
        if self._started_at is not None:
            raise RuntimeError("CarbonTracker already started")
        self._report = None
        if self._tracker is not None:
            with _capture_codecarbon_errors() as capture:
                self._tracker.start()
            if getattr(self._tracker, "_start_time", None) is None:
                raise RuntimeError(
                    "codecarbon failed to start tracking" + _describe(capture.errors)
                )
        self._started_at = time.perf_counter()

    def stop(self) -> EnergyReport:
        """Stop measuring, write ``output_dir/energy.json`` and return the report."""
        if self._started_at is None:
            raise RuntimeError("CarbonTracker.stop() called before start()")
        wall_s = time.perf_counter() - self._started_at
        self._started_at = None
        if self._tracker is None:
            report = EnergyReport(
                energy_kwh=0.0,
                emissions_kg=0.0,
                # Wall time is still real and useful; only energy accounting is off.
                duration_s=wall_s,
                country_iso_code=self.country_iso_code,
                grid_intensity_g_per_kwh=0.0,
                cpu_power_source="disabled",
                cpu_model=cpu_model(),
                cpu_tracking_method="disabled",
            )
        else:
            report = self._stop_tracker()
        self._report = report
        self._write(report)
        return report

    def _stop_tracker(self) -> EnergyReport:
        tracker = self._tracker
        previous = getattr(tracker, "final_emissions_data", None)
        with _capture_codecarbon_errors() as capture:
            tracker.stop()
        data = getattr(tracker, "final_emissions_data", None)
        if data is None or data is previous or getattr(tracker, "_start_time", None) is not None:
            raise RuntimeError("codecarbon failed to stop tracking" + _describe(capture.errors))
        energy = float(data.energy_consumed)
        emissions = float(data.emissions)
        if energy > 0:
            intensity = emissions * 1000.0 / energy
        else:
            intensity = country_grid_intensity_g_per_kwh(self.country_iso_code)
        source, method = classify_cpu_power_source(getattr(tracker, "_hardware", []))
        return EnergyReport(
            energy_kwh=energy,
            emissions_kg=emissions,
            duration_s=float(data.duration),
            country_iso_code=str(data.country_iso_code or self.country_iso_code),
            grid_intensity_g_per_kwh=intensity,
            cpu_power_source=source,
            cpu_model=str(data.cpu_model or ""),
            cpu_tracking_method=method,
            cpu_energy_kwh=float(data.cpu_energy),
            gpu_energy_kwh=float(data.gpu_energy),
            ram_energy_kwh=float(data.ram_energy),
        )

    def _write(self, report: EnergyReport) -> None:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        path = self.output_dir / ENERGY_JSON
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.stop()
            return
        # Stop the sampling threads but let the body's exception win.
        try:
            self.stop()
        except Exception:  # noqa: BLE001
            absl_logging.exception("CarbonTracker.stop() failed while handling another error")


def _describe(errors: Sequence[str]) -> str:
    if not errors:
        return " (codecarbon logged no error)"
    return ": " + "; ".join(dict.fromkeys(errors))  # de-duplicated, in order
