"""Time-to-target speedup, final returns and energy ratios of quantized vs fp32 actor runs.

This module implements the QuaRL/ActorQ paper's headline metric (arXiv 1910.01055, Table 4):

    speedup = (time for fp32 to reach the target return) / (time for the quantized run to reach it),

where the target is 95% of fp32's best (smoothed) evaluation return. Exact definitions used here:

* **Smoothing** (:func:`smooth`): trailing moving average over evaluations, in evaluation order;
  point ``i`` is the mean of the last ``min(window, i + 1)`` returns.
* **Baseline curve** (:func:`target_return`): each fp32 seed's smoothed curve is linearly
  interpolated onto a common actor-steps grid (the union of the seeds' evaluation points inside
  the range every seed covers) and averaged over seeds. ``best``/``low`` are its max/min.
* **Target** (threshold): ``fraction * best`` when ``best > 0``; otherwise (all-negative returns,
  e.g. MountainCar/Acrobot, where ``0.95 * best`` would be *above* the best)
  ``low + fraction * (best - low)``, i.e. ``fraction`` of the way from the worst to the best
  point of the curve.
* **Time to target** (:func:`time_to_threshold`): per seed, the x value (wall seconds or actor
  steps) of the first evaluation whose smoothed return is ``>= threshold``; ``None`` if never.
* **Speedup** (:func:`speedup`): mean over seeds of the fp32 times divided by the mean over seeds
  of the quantized times. It is only reported when *every* seed of both precisions reached the
  target; otherwise it is ``None`` and the status says which side did not reach it.
* **Final return** (:func:`final_return`): mean of the raw returns of the last 10% of evaluations
  (at least the last one); mean and population std (ddof=0) over seeds.
* **Energy** (:func:`energy_comparison`): means over seeds of the whole-run ``energy_kwh`` and
  ``emissions_kg`` from ``energy.json``, and the ratios fp32 / quantized; ``None`` unless every run
  has an ``energy.json`` with both fields.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
from absl import logging

from actorq.metrics.loggers import surviving_rows

Axis = Literal["wall_time_s", "actor_steps"]
AXES: tuple[str, ...] = get_args(Axis)

CONFIG_FILE = "config.json"
EVAL_FILE = "eval.jsonl"
ENERGY_FILE = "energy.json"

_REQUIRED_CONFIG_KEYS = ("agent", "task", "quantizer", "seed")
# learner_steps is part of the writer's contract but no metric needs it, so a run without it still
# loads (as NaN) rather than blocking the whole report.
_REQUIRED_EVAL_KEYS = ("wall_time_s", "actor_steps", "eval_return")


class RunFormatError(ValueError):
    """A run directory file exists but its content does not follow the run-directory contract."""


@dataclass(frozen=True, eq=False)
class Curve:
    """An evaluation curve: returns ``y`` at positions ``x`` (wall seconds or actor steps).

    Points are kept in evaluation order (the order they were written), which is the order
    smoothing and time-to-threshold use.
    """

    x: np.ndarray
    y: np.ndarray

    def __post_init__(self) -> None:
        x = np.asarray(self.x, dtype=np.float64)
        y = np.asarray(self.y, dtype=np.float64)
        if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
            raise ValueError(
                f"Curve x and y must be 1-D and equal length, got {x.shape}, {y.shape}"
            )
        # frozen dataclass: normalise dtypes once so every consumer sees float64 arrays.
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)

    def __len__(self) -> int:
        return int(self.x.shape[0])


@dataclass(frozen=True, eq=False)
class RunRecord:
    """One experiment run: its config fields, evaluation log and optional energy record."""

    path: Path
    agent: str
    task: str
    quantizer: str
    seed: int
    config: Mapping[str, Any]
    wall_time_s: np.ndarray
    actor_steps: np.ndarray
    learner_steps: np.ndarray
    eval_return: np.ndarray
    energy: Mapping[str, Any] | None = None
    # The learner's own fp32 policy of the same versions (``eval_return_fp32``), where every
    # evaluation of the run scored it; None otherwise.
    eval_return_fp32: np.ndarray | None = None

    def curve(self, axis: Axis = "wall_time_s") -> Curve:
        """Returns the eval-return curve against ``axis`` ('wall_time_s' or 'actor_steps')."""
        _check_axis(axis)
        return Curve(x=getattr(self, axis), y=self.eval_return)

    @property
    def num_evals(self) -> int:
        """Number of evaluations in the run."""
        return int(self.eval_return.shape[0])


def _check_axis(axis: str) -> None:
    if axis not in AXES:
        raise ValueError(f"axis must be one of {AXES}, got {axis!r}")


def read_json_object(path: Path) -> dict[str, Any]:
    """A run file holding one JSON object: FileNotFoundError when missing, RunFormatError
    (naming the path) when empty, malformed or not an object."""
    if not path.is_file():
        raise FileNotFoundError(f"missing run file: {path}")
    text = path.read_text()
    if not text.strip():
        raise RunFormatError(f"empty run file: {path}")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise RunFormatError(f"invalid JSON in {path}: {e}") from e
    if not isinstance(obj, dict):
        raise RunFormatError(f"expected a JSON object in {path}, got {type(obj).__name__}")
    return obj


def _read_evals(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"missing run file: {path}")
    lines = [(i + 1, line) for i, line in enumerate(path.read_text().splitlines()) if line.strip()]
    records: list[dict[str, Any]] = []
    for k, (lineno, line) in enumerate(lines):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            if k == len(lines) - 1:
                # A writer killed mid-line leaves a partial last record; everything before it is
                # complete, so drop only that line.
                logging.warning("skipping truncated last line %d of %s", lineno, path)
                continue
            raise RunFormatError(f"invalid JSON on line {lineno} of {path}: {e}") from e
        if not isinstance(obj, dict):
            raise RunFormatError(f"line {lineno} of {path} is not a JSON object")
        missing = [key for key in _REQUIRED_EVAL_KEYS if key not in obj]
        if missing:
            raise RunFormatError(f"line {lineno} of {path} lacks keys {missing}")
        for key in (*_REQUIRED_EVAL_KEYS, "learner_steps"):
            value = obj.get(key, math.nan if key == "learner_steps" else None)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise RunFormatError(f"line {lineno} of {path}: {key}={value!r} is not a number")
            if key != "learner_steps" and not math.isfinite(value):
                raise RunFormatError(f"line {lineno} of {path}: {key}={value!r} is not finite")
        records.append(obj)
    if not records:
        raise RunFormatError(f"no evaluations in {path}")
    return surviving_rows(records)


def run_label(config: dict[str, Any]) -> str:
    """What a run is compared as: its ``quantizer``, or for a mixed-precision fleet
    (``actor_quantizers`` naming more than one precision) ``fleet:fp32+int8+...``, one name per
    actor, so fleets form their own groups in a report."""
    spec = str(config.get("actor_quantizers") or "")
    names = [name.strip() for name in spec.split(",") if name.strip()]
    if len(set(names)) > 1:
        return "fleet:" + "+".join(names)
    return str(config["quantizer"])


def load_run(run_dir: str | Path) -> RunRecord:
    """Loads ``config.json``, ``eval.jsonl`` and the optional ``energy.json`` of one run directory.

    A truncated (unparseable) final line of ``eval.jsonl`` is skipped; any other malformed line is
    an error. Raises FileNotFoundError (naming the path) for a missing directory or required file
    and RunFormatError (a ValueError, naming the path) for empty or malformed content.
    """
    path = Path(run_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"run directory not found: {path}")
    config_path = path / CONFIG_FILE
    config = read_json_object(config_path)
    missing = [key for key in _REQUIRED_CONFIG_KEYS if key not in config]
    if missing:
        raise RunFormatError(f"{config_path} lacks keys {missing}")
    for key in ("agent", "task", "quantizer"):
        if not isinstance(config[key], str) or not config[key]:
            raise RunFormatError(f"{config_path}: {key}={config[key]!r} must be a non-empty string")
    seed = config["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise RunFormatError(f"{config_path}: seed={seed!r} must be an integer")

    evals = _read_evals(path / EVAL_FILE)
    energy_path = path / ENERGY_FILE
    energy = read_json_object(energy_path) if energy_path.exists() else None
    return RunRecord(
        path=path,
        agent=config["agent"],
        task=config["task"],
        quantizer=run_label(config),
        seed=seed,
        config=config,
        wall_time_s=np.array([r["wall_time_s"] for r in evals], dtype=np.float64),
        actor_steps=np.array([r["actor_steps"] for r in evals], dtype=np.float64),
        learner_steps=np.array([r.get("learner_steps", math.nan) for r in evals], dtype=np.float64),
        eval_return=np.array([r["eval_return"] for r in evals], dtype=np.float64),
        energy=energy,
        eval_return_fp32=(np.array([r["eval_return_fp32"] for r in evals], dtype=np.float64)
                          if evals and all("eval_return_fp32" in r for r in evals) else None),
    )


def smooth(y: Sequence[float] | np.ndarray, window: int = 10) -> np.ndarray:
    """Trailing moving average: ``out[i] = mean(y[max(0, i - window + 1) : i + 1])``.

    Each point averages the last ``min(window, i + 1)`` values, so the output has the same length
    as ``y``, uses no future evaluations (causal: a time-to-target never looks ahead), and the
    first points average over fewer values. ``window=1`` returns ``y`` unchanged.
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    values = np.asarray(y, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"smooth expects a 1-D sequence, got shape {values.shape}")
    if values.size == 0:
        return values.copy()
    csum = np.concatenate([[0.0], np.cumsum(values)])
    idx = np.arange(values.size)
    start = np.maximum(0, idx - window + 1)
    return (csum[idx + 1] - csum[start]) / (idx + 1 - start)


def time_to_threshold(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    threshold: float,
    window: int = 10,
) -> float | None:
    """Returns the first ``x`` (in evaluation order) where ``smooth(y, window) >= threshold``.

    Returns None when the smoothed curve never reaches the threshold.
    """
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.float64)
    if xs.shape != ys.shape:
        raise ValueError(f"x and y must have the same shape, got {xs.shape} and {ys.shape}")
    hits = np.flatnonzero(smooth(ys, window) >= threshold)
    return float(xs[hits[0]]) if hits.size else None


@dataclass(frozen=True, eq=False)
class MeanCurve:
    """Curves averaged over seeds on a common grid, with their spread."""

    x: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    low: np.ndarray
    high: np.ndarray
    num_curves: int


def mean_curve(curves: Sequence[Curve]) -> MeanCurve:
    """Linearly interpolates ``curves`` onto a common grid and averages them pointwise.

    The grid is the sorted union of all curves' x values inside the range every curve covers
    (``[max of starts, min of ends]``), so no curve is extrapolated. If the curves do not overlap
    at all, the union of all x values is used and curves are held constant past their ends.
    Curves are sorted by x (stably) before interpolation.
    """
    if not curves:
        raise ValueError("mean_curve needs at least one curve")
    if any(len(c) == 0 for c in curves):
        raise ValueError("mean_curve got an empty curve")
    sorted_curves = []
    for c in curves:
        order = np.argsort(c.x, kind="stable")
        sorted_curves.append((c.x[order], c.y[order]))
    lo = max(float(xs[0]) for xs, _ in sorted_curves)
    hi = min(float(xs[-1]) for xs, _ in sorted_curves)
    all_x = np.unique(np.concatenate([xs for xs, _ in sorted_curves]))
    grid = all_x[(all_x >= lo) & (all_x <= hi)]
    if grid.size == 0:
        logging.warning("curves do not overlap in x; averaging with constant extrapolation")
        grid = all_x
    stacked = np.stack([np.interp(grid, xs, ys) for xs, ys in sorted_curves])
    return MeanCurve(
        x=grid,
        mean=stacked.mean(axis=0),
        std=stacked.std(axis=0),
        low=stacked.min(axis=0),
        high=stacked.max(axis=0),
        num_curves=len(curves),
    )


def smoothed_mean_curve(
    runs: Sequence[RunRecord], axis: Axis = "actor_steps", window: int = 10
) -> MeanCurve:
    """Smooths each run's curve in evaluation order, then averages over runs (see mean_curve)."""
    _check_axis(axis)
    curves = [Curve(x=r.curve(axis).x, y=smooth(r.eval_return, window)) for r in runs]
    return mean_curve(curves)


def smoothed_mean_fp32_curve(
    runs: Sequence[RunRecord], axis: Axis = "actor_steps", window: int = 10
) -> MeanCurve | None:
    """The same for the runs' fp32-scored policy (``eval_return_fp32``); None unless every run
    has it."""
    _check_axis(axis)
    if not runs or any(r.eval_return_fp32 is None for r in runs):
        return None
    return mean_curve([Curve(x=r.curve(axis).x, y=smooth(r.eval_return_fp32, window))
                       for r in runs])


def threshold_from_curve(y: Sequence[float] | np.ndarray, fraction: float = 0.95) -> float:
    """The target return for a (smoothed, mean) baseline curve ``y``.

    ``fraction * max(y)`` when ``max(y) > 0``; otherwise ``min(y) + fraction * (max(y) - min(y))``
    because for negative returns ``fraction * best`` lies above the best and is unreachable.
    """
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    values = np.asarray(y, dtype=np.float64)
    if values.size == 0:
        raise ValueError("threshold_from_curve needs a non-empty curve")
    best, low = float(values.max()), float(values.min())
    if best > 0.0:
        return fraction * best
    return low + fraction * (best - low)


def target_return(
    baseline_runs: Sequence[RunRecord], fraction: float = 0.95, window: int = 10
) -> tuple[float, float]:
    """Returns ``(threshold, best)`` from the mean-over-seeds smoothed baseline (fp32) curve.

    Seeds are aligned on actor steps, so the target is the same whichever axis the time is
    measured on. See :func:`threshold_from_curve` for the threshold rule.
    """
    if not baseline_runs:
        raise ValueError("target_return needs at least one baseline run")
    curve = smoothed_mean_curve(baseline_runs, axis="actor_steps", window=window)
    return threshold_from_curve(curve.mean, fraction), float(curve.mean.max())


@dataclass(frozen=True)
class PrecisionTimes:
    """Per-seed times to the target of one precision, and their mean over seeds that reached it."""

    precision: str
    seeds: tuple[int, ...]
    times: tuple[float | None, ...]

    @property
    def num_seeds(self) -> int:
        """Number of seeds."""
        return len(self.seeds)

    @property
    def num_reached(self) -> int:
        """Number of seeds whose smoothed curve reached the target."""
        return sum(t is not None for t in self.times)

    @property
    def all_reached(self) -> bool:
        """True when every seed reached the target."""
        return self.num_reached == self.num_seeds

    @property
    def mean(self) -> float | None:
        """Mean time over the seeds that reached the target; None when none did."""
        reached = [t for t in self.times if t is not None]
        return float(np.mean(reached)) if reached else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "precision": self.precision,
            "seeds": list(self.seeds),
            "times": list(self.times),
            "mean": self.mean,
            "num_reached": self.num_reached,
            "num_seeds": self.num_seeds,
        }


@dataclass(frozen=True)
class FinalReturn:
    """Final return over seeds: per-seed values, mean and population std."""

    seeds: tuple[int, ...]
    values: tuple[float, ...]

    @property
    def mean(self) -> float:
        """Mean over seeds."""
        return float(np.mean(self.values))

    @property
    def std(self) -> float:
        """Population standard deviation (ddof=0) over seeds; 0 for one seed."""
        return float(np.std(self.values))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "seeds": list(self.seeds),
            "values": list(self.values),
            "mean": self.mean,
            "std": self.std,
        }


@dataclass(frozen=True)
class EnergyComparison:
    """Mean whole-run energy and emissions over seeds, and the baseline/quantized ratios."""

    baseline_energy_kwh: float
    quant_energy_kwh: float
    baseline_emissions_kg: float
    quant_emissions_kg: float
    energy_ratio: float | None
    emissions_ratio: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "baseline_energy_kwh": self.baseline_energy_kwh,
            "quant_energy_kwh": self.quant_energy_kwh,
            "baseline_emissions_kg": self.baseline_emissions_kg,
            "quant_emissions_kg": self.quant_emissions_kg,
            "energy_ratio": self.energy_ratio,
            "emissions_ratio": self.emissions_ratio,
        }


@dataclass(frozen=True)
class SpeedupResult:
    """Outcome of :func:`speedup` for one axis: target, per-seed times and the speedup.

    ``speedup`` is None unless every seed of both precisions reached the target; ``status`` is
    'ok', 'quant not reached', 'baseline not reached', 'neither reached', or
    'undefined (zero time)'. ``per_seed_speedups[i]`` is the baseline mean time divided by quant
    seed ``i``'s time (None where that seed did not reach, or the baseline mean is missing).
    """

    axis: str
    fraction: float
    window: int
    threshold: float
    baseline_best: float
    baseline: PrecisionTimes
    quant: PrecisionTimes
    speedup: float | None
    per_seed_speedups: tuple[float | None, ...]
    status: str
    baseline_final: FinalReturn
    quant_final: FinalReturn
    energy: EnergyComparison | None = field(default=None)

    @property
    def not_reached(self) -> bool:
        """True when some seed of the quantized precision never reached the target."""
        return not self.quant.all_reached

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "axis": self.axis,
            "fraction": self.fraction,
            "window": self.window,
            "threshold": self.threshold,
            "baseline_best": self.baseline_best,
            "baseline": self.baseline.to_dict(),
            "quant": self.quant.to_dict(),
            "speedup": self.speedup,
            "per_seed_speedups": list(self.per_seed_speedups),
            "status": self.status,
            "not_reached": self.not_reached,
            "baseline_final": self.baseline_final.to_dict(),
            "quant_final": self.quant_final.to_dict(),
            "energy": None if self.energy is None else self.energy.to_dict(),
        }


def precision_times(
    runs: Sequence[RunRecord], threshold: float, axis: Axis = "wall_time_s", window: int = 10
) -> PrecisionTimes:
    """Per-seed times to ``threshold`` on ``axis`` for runs of one precision."""
    _check_axis(axis)
    if not runs:
        raise ValueError("precision_times needs at least one run")
    return PrecisionTimes(
        precision=runs[0].quantizer,
        seeds=tuple(r.seed for r in runs),
        times=tuple(
            time_to_threshold(r.curve(axis).x, r.eval_return, threshold, window) for r in runs
        ),
    )


def final_return(run: RunRecord, tail_fraction: float = 0.1) -> float:
    """Mean raw return of the last ``ceil(tail_fraction * num_evals)`` evaluations (at least 1)."""
    if not 0.0 <= tail_fraction <= 1.0:
        raise ValueError(f"tail_fraction must be in [0, 1], got {tail_fraction}")
    n = max(1, math.ceil(tail_fraction * run.num_evals))
    return float(np.mean(run.eval_return[-n:]))


def final_returns(runs: Sequence[RunRecord], tail_fraction: float = 0.1) -> FinalReturn:
    """Final return (see :func:`final_return`) of each run, with mean and std over runs."""
    if not runs:
        raise ValueError("final_returns needs at least one run")
    return FinalReturn(
        seeds=tuple(r.seed for r in runs),
        values=tuple(final_return(r, tail_fraction) for r in runs),
    )


def mean_energy(runs: Sequence[RunRecord]) -> tuple[float, float] | None:
    """Mean ``(energy_kwh, emissions_kg)`` over runs; None unless every run records both."""
    if not runs:
        return None
    kwh: list[float] = []
    kg: list[float] = []
    for r in runs:
        energy = r.energy or {}
        e, c = energy.get("energy_kwh"), energy.get("emissions_kg")
        if not isinstance(e, (int, float)) or not isinstance(c, (int, float)):
            return None
        if isinstance(e, bool) or isinstance(c, bool):
            return None
        kwh.append(float(e))
        kg.append(float(c))
    return float(np.mean(kwh)), float(np.mean(kg))


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0.0 else None


def energy_comparison(
    baseline_runs: Sequence[RunRecord], quant_runs: Sequence[RunRecord]
) -> EnergyComparison | None:
    """Mean energy/emissions per precision and the ratios baseline / quantized.

    Uses the whole-run totals recorded in ``energy.json``. Returns None unless every run has
    numeric ``energy_kwh`` and ``emissions_kg``; a ratio is None when the quantized mean is 0.
    """
    if not baseline_runs or not quant_runs:
        return None
    base, quant = mean_energy(baseline_runs), mean_energy(quant_runs)
    if base is None or quant is None:
        return None
    return EnergyComparison(
        baseline_energy_kwh=base[0],
        quant_energy_kwh=quant[0],
        baseline_emissions_kg=base[1],
        quant_emissions_kg=quant[1],
        energy_ratio=_ratio(base[0], quant[0]),
        emissions_ratio=_ratio(base[1], quant[1]),
    )


def _check_same_experiment(runs: Sequence[RunRecord]) -> None:
    keys = {(r.agent, r.task) for r in runs}
    if len(keys) > 1:
        raise ValueError(
            f"runs mix experiments {sorted(keys)}; compare one (agent, task) at a time"
        )


def speedup(
    fp32_runs: Sequence[RunRecord],
    quant_runs: Sequence[RunRecord],
    fraction: float = 0.95,
    window: int = 10,
    axis: Axis = "wall_time_s",
    threshold: float | None = None,
) -> SpeedupResult:
    """The paper's time-to-target speedup of ``quant_runs`` over ``fp32_runs`` on ``axis``.

    The target is :func:`target_return` of the fp32 runs unless ``threshold`` is given. Each seed's
    time to target is :func:`time_to_threshold`; the speedup is the ratio of the mean times
    (fp32 / quantized), reported only when every seed of both precisions reached the target.
    Final returns and (when all runs have energy.json) energy ratios are attached.
    """
    _check_axis(axis)
    if not fp32_runs:
        raise ValueError("speedup needs at least one fp32 (baseline) run")
    if not quant_runs:
        raise ValueError("speedup needs at least one quantized run")
    _check_same_experiment([*fp32_runs, *quant_runs])
    target, best = target_return(fp32_runs, fraction, window)
    if threshold is not None:
        target = float(threshold)
    base = precision_times(fp32_runs, target, axis, window)
    quant = precision_times(quant_runs, target, axis, window)

    value: float | None = None
    if base.all_reached and quant.all_reached:
        assert base.mean is not None and quant.mean is not None
        value = _ratio(base.mean, quant.mean)
        status = "ok" if value is not None else "undefined (zero time)"
    elif not base.all_reached and not quant.all_reached:
        status = "neither reached"
    elif not quant.all_reached:
        status = "quant not reached"
    else:
        status = "baseline not reached"
    per_seed = tuple(
        None if t is None or base.mean is None else _ratio(base.mean, t) for t in quant.times
    )
    return SpeedupResult(
        axis=axis,
        fraction=fraction,
        window=window,
        threshold=target,
        baseline_best=best,
        baseline=base,
        quant=quant,
        speedup=value,
        per_seed_speedups=per_seed,
        status=status,
        baseline_final=final_returns(fp32_runs),
        quant_final=final_returns(quant_runs),
        energy=energy_comparison(fp32_runs, quant_runs),
    )
