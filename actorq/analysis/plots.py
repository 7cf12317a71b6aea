"""Learning-curve and runtime-breakdown plots (PNG, matplotlib Agg backend)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes

# Figures are built with the object API on an explicit Agg canvas rather than pyplot: it renders
# headless (servers, tests) and never switches the global backend of a user's notebook session.
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from actorq.analysis.speedup import (
    Axis,
    RunRecord,
    smoothed_mean_curve,
    smoothed_mean_fp32_curve,
    target_return,
)

BREAKDOWN_SECTIONS: tuple[str, ...] = ("inference", "env", "pull", "deserialize", "load")

_AXIS_LABELS: dict[str, str] = {"wall_time_s": "wall time (s)", "actor_steps": "actor steps"}
_AXIS_SUFFIX: dict[str, str] = {"wall_time_s": "wall_time", "actor_steps": "actor_steps"}

Groups = Mapping[tuple[str, str], Mapping[str, Sequence[RunRecord]]]


def _new_figure(size: tuple[float, float]) -> tuple[Figure, Axes]:
    # Not registered with pyplot, so the figure is garbage-collected without plt.close().
    fig = Figure(figsize=size)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def safe_name(text: str) -> str:
    """``text`` with every character outside ``[A-Za-z0-9_.-]`` replaced by '_' (file names)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "unnamed"


def precision_order(precisions: Sequence[str], baseline: str = "fp32") -> list[str]:
    """Baseline first, then the other precisions alphabetically (a stable table/legend order)."""
    return sorted(precisions, key=lambda p: (p != baseline, p))


def plot_curves(
    groups: Groups,
    out_dir: str | Path,
    baseline: str = "fp32",
    fraction: float = 0.95,
    window: int = 10,
) -> list[Path]:
    """Writes, per (agent, task), return-vs-wall-time and return-vs-actor-steps PNGs.

    One line per precision: the mean over seeds of the smoothed curves interpolated on a common
    grid (see ``mean_curve``), shaded between the seeds' min and max. A dashed horizontal line
    marks the target return when the group has baseline runs. Files are
    ``{agent}_{task}_{wall_time|actor_steps}.png``; returns their paths.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for (agent, task), by_precision in sorted(groups.items()):
        base_runs = by_precision.get(baseline)
        threshold = target_return(base_runs, fraction, window)[0] if base_runs else None
        axis: Axis
        for axis in ("wall_time_s", "actor_steps"):
            fig, ax = _new_figure((6.4, 4.2))
            for precision in precision_order(list(by_precision), baseline):
                runs = by_precision[precision]
                if not runs:
                    continue
                curve = smoothed_mean_curve(runs, axis=axis, window=window)
                (line,) = ax.plot(curve.x, curve.mean, label=f"{precision} (n={len(runs)})")
                ax.fill_between(
                    curve.x, curve.low, curve.high, color=line.get_color(), alpha=0.2, lw=0
                )
                fp32 = None if precision == baseline else smoothed_mean_fp32_curve(
                    runs, axis=axis, window=window)
                if fp32 is not None:  # the learner's own policy: did int8 hurt data or deployment?
                    ax.plot(fp32.x, fp32.mean, color=line.get_color(), linestyle=":",
                            label=f"{precision} runs, fp32-scored policy")
            if threshold is not None:
                ax.axhline(
                    threshold,
                    color="black",
                    linestyle="--",
                    linewidth=1.0,
                    label=f"target {threshold:.4g}",
                )
            ax.set_xlabel(_AXIS_LABELS[axis])
            ax.set_ylabel(f"eval return (smoothed, window={window})")
            ax.set_title(f"{agent.upper()} {task}")
            ax.grid(alpha=0.3)
            ax.legend(loc="best", fontsize="small")
            fig.tight_layout()
            path = out / f"{safe_name(agent)}_{safe_name(task)}_{_AXIS_SUFFIX[axis]}.png"
            fig.savefig(path, dpi=120)
            paths.append(path)
    return paths


def plot_breakdown(
    breakdowns: Mapping[str, Mapping[str, float]],
    path: str | Path,
    normalize: bool = False,
    title: str = "Actor runtime breakdown",
) -> Path:
    """Stacked bars, one per precision, of actor section seconds (or fractions if ``normalize``).

    Sections are stacked in the order of ``BREAKDOWN_SECTIONS`` ('inference', 'env', 'pull',
    'deserialize', 'load'), then any other section names alphabetically; a missing section counts
    as 0. Mirrors the paper's Fig. 9. Returns ``path``.
    """
    if not breakdowns:
        raise ValueError("plot_breakdown needs at least one precision")
    extra = sorted({s for b in breakdowns.values() for s in b} - set(BREAKDOWN_SECTIONS))
    sections = [*BREAKDOWN_SECTIONS, *extra]
    precisions = list(breakdowns)
    values = np.array(
        [[float(breakdowns[p].get(s, 0.0)) for s in sections] for p in precisions], dtype=np.float64
    )
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("breakdown values must be finite and non-negative")
    if normalize:
        totals = values.sum(axis=1, keepdims=True)
        values = np.divide(values, totals, out=np.zeros_like(values), where=totals > 0)

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = _new_figure((max(4.0, 1.2 * len(precisions) + 2.5), 4.2))
    bottom = np.zeros(len(precisions))
    positions = np.arange(len(precisions))
    for j, section in enumerate(sections):
        ax.bar(positions, values[:, j], bottom=bottom, label=section, width=0.6)
        bottom += values[:, j]
    ax.set_xticks(positions, precisions)
    ax.set_ylabel("fraction of actor time" if normalize else "seconds")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    fig.tight_layout()
    # The legend sits right of the axes; "tight" keeps it inside the saved image.
    fig.savefig(out, dpi=120, bbox_inches="tight")
    return out
