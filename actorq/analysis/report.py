"""Paper-style (QuaRL Table 4) speedup report over a set of run directories.

``write_report`` loads runs, groups them by (agent, task) and precision, and writes
``speedup.md`` (a Markdown table), ``speedup.json`` (the same rows plus per-seed details) and the
learning-curve PNGs. Metric definitions are in :mod:`actorq.analysis.speedup`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from absl import logging

from actorq.analysis.plots import (
    BREAKDOWN_SECTIONS,
    plot_breakdown,
    plot_curves,
    precision_order,
    safe_name,
)
from actorq.analysis.speedup import (
    CONFIG_FILE,
    Axis,
    RunRecord,
    final_returns,
    load_run,
    mean_energy,
    read_json_object,
    run_label,
    speedup,
    target_return,
)
from actorq.metrics.loggers import read_resumes

GroupKey = tuple[str, str]
# Row-key suffix per axis: "wall" columns are seconds, "steps" columns are actor steps.
_AXES: tuple[tuple[str, Axis], ...] = (("wall", "wall_time_s"), ("steps", "actor_steps"))
Groups = dict[GroupKey, dict[str, list[RunRecord]]]

MARKDOWN_COLUMNS: tuple[str, ...] = (
    "task",
    "algo",
    "precision",
    "seeds",
    "threshold return",
    "fp32 time-to-target (s)",
    "quant time-to-target (s)",
    "speedup (wall)",
    "speedup (actor steps)",
    "final return",
    "energy kWh",
    "CO2 kg",
    "CO2 ratio fp32/quant",
)


def find_run_dirs(root: str | Path) -> list[Path]:
    """All directories under ``root`` (inclusive) that contain a ``config.json``, sorted."""
    base = Path(root)
    if not base.is_dir():
        raise FileNotFoundError(f"runs root not found: {base}")
    return sorted(p.parent for p in base.rglob(CONFIG_FILE))


def group_runs(run_dirs: Iterable[str | Path | RunRecord]) -> Groups:
    """Loads runs and groups them as ``{(agent, task): {quantizer: [runs sorted by seed]}}``."""
    groups: Groups = {}
    for item in run_dirs:
        run = item if isinstance(item, RunRecord) else load_run(item)
        groups.setdefault((run.agent, run.task), {}).setdefault(run.quantizer, []).append(run)
    for by_precision in groups.values():
        for runs in by_precision.values():
            runs.sort(key=lambda r: (r.seed, str(r.path)))
    return groups


def _row(
    agent: str,
    task: str,
    precision: str,
    runs: Sequence[RunRecord],
    base_runs: Sequence[RunRecord] | None,
    baseline: str,
    fraction: float,
    window: int,
) -> dict[str, Any]:
    final = final_returns(runs)
    row: dict[str, Any] = {
        "agent": agent,
        "task": task,
        "precision": precision,
        "baseline": baseline,
        "seeds": [r.seed for r in runs],
        "num_seeds": len(runs),
        "fraction": fraction,
        "window": window,
        "final_return_mean": final.mean,
        "final_return_std": final.std,
        "final_returns": list(final.values),
        "threshold": None,
        "baseline_best": None,
        "energy_kwh": None,
        "emissions_kg": None,
        "energy_ratio": None,
        "co2_ratio": None,
    }
    energy = mean_energy(runs)
    if energy is not None:
        row["energy_kwh"], row["emissions_kg"] = energy
    for suffix, _ in _AXES:
        row.update(
            {
                f"fp32_time_{suffix}": None,
                f"quant_time_{suffix}": None,
                f"fp32_reached_{suffix}": 0,
                f"quant_reached_{suffix}": 0,
                f"fp32_num_seeds_{suffix}": 0,
                f"fp32_seed_times_{suffix}": [],
                f"quant_seed_times_{suffix}": [],
                f"speedup_{suffix}": None,
                f"per_seed_speedups_{suffix}": [],
                f"status_{suffix}": f"no {baseline} baseline",
            }
        )
    if not base_runs:
        return row

    threshold, best = target_return(base_runs, fraction, window)
    row["threshold"], row["baseline_best"] = threshold, best
    for suffix, axis in _AXES:
        # One threshold for both axes (computed once above) so the two speedups are comparable.
        result = speedup(base_runs, runs, fraction, window, axis=axis, threshold=threshold)
        row.update(
            {
                f"fp32_time_{suffix}": result.baseline.mean,
                f"quant_time_{suffix}": result.quant.mean,
                f"fp32_reached_{suffix}": result.baseline.num_reached,
                f"quant_reached_{suffix}": result.quant.num_reached,
                f"fp32_num_seeds_{suffix}": result.baseline.num_seeds,
                f"fp32_seed_times_{suffix}": list(result.baseline.times),
                f"quant_seed_times_{suffix}": list(result.quant.times),
                f"speedup_{suffix}": result.speedup,
                f"per_seed_speedups_{suffix}": list(result.per_seed_speedups),
                f"status_{suffix}": result.status,
            }
        )
        if result.energy is not None:
            row["energy_ratio"] = result.energy.energy_ratio
            row["co2_ratio"] = result.energy.emissions_ratio
    return row


def speedup_table(
    groups: Mapping[GroupKey, Mapping[str, Sequence[RunRecord]]],
    baseline: str = "fp32",
    fraction: float = 0.95,
    window: int = 10,
) -> list[dict[str, Any]]:
    """One row per (agent, task, precision), the baseline row first within each experiment.

    Times are means over seeds that reached the target (``*_reached_*`` counts them); speedups
    are None unless every seed of both precisions reached it (``status_*`` says why). The
    baseline's own row compares it with itself (speedup 1 when reached). Groups without baseline
    runs still get rows (final returns, energy) with status 'no <baseline> baseline'.
    """
    rows: list[dict[str, Any]] = []
    for (agent, task), by_precision in sorted(groups.items()):
        base_runs = by_precision.get(baseline)
        for precision in precision_order(list(by_precision), baseline):
            runs = by_precision[precision]
            if runs:
                rows.append(
                    _row(agent, task, precision, runs, base_runs, baseline, fraction, window)
                )
    return rows


def _num(value: float | None, fmt: str = ".4g") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return format(value, fmt)


def _time_cell(mean: float | None, reached: int, total: int) -> str:
    if reached == 0 or mean is None:
        return "not reached" if total else "—"
    text = f"{mean:.1f}"
    # Partial reach: show the mean of the seeds that made it, and how many did.
    return text if reached == total else f"{text} ({reached}/{total} reached)"


def _speedup_cell(value: float | None, status: str) -> str:
    return f"{value:.2f}x" if value is not None else status


def markdown_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Renders :func:`speedup_table` rows as a Markdown table with ``MARKDOWN_COLUMNS``."""
    lines = [
        "| " + " | ".join(MARKDOWN_COLUMNS) + " |",
        "|" + "|".join("---" for _ in MARKDOWN_COLUMNS) + "|",
    ]
    for row in rows:
        n = int(row["num_seeds"])
        fp32_n = int(row.get("fp32_num_seeds_wall", 0))
        cells = [
            str(row["task"]),
            str(row["agent"]).upper(),
            str(row["precision"]),
            ", ".join(str(s) for s in row["seeds"]),
            _num(row["threshold"], ".2f"),
            _time_cell(row["fp32_time_wall"], int(row["fp32_reached_wall"]), fp32_n),
            _time_cell(row["quant_time_wall"], int(row["quant_reached_wall"]), n),
            _speedup_cell(row["speedup_wall"], str(row["status_wall"])),
            _speedup_cell(row["speedup_steps"], str(row["status_steps"])),
            f"{row['final_return_mean']:.2f} ± {row['final_return_std']:.2f}",
            _num(row["energy_kwh"]),
            _num(row["emissions_kg"]),
            _num(row["co2_ratio"], ".2f"),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def json_safe(value: Any) -> Any:
    """Plain, strict-JSON data: NaN/inf become None (other languages' readers choke on them),
    numpy scalars become Python scalars, mappings and sequences are converted recursively."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def write_report(
    run_dirs: Iterable[str | Path],
    out_dir: str | Path,
    baseline: str = "fp32",
    fraction: float = 0.95,
    window: int = 10,
) -> Path:
    """Writes ``speedup.md``, ``speedup.json`` and learning-curve PNGs to ``out_dir``.

    Returns the path of ``speedup.md``.
    """
    dirs = [Path(d) for d in run_dirs]
    if not dirs:
        raise ValueError("write_report needs at least one run directory")
    groups = group_runs(dirs)
    rows = speedup_table(groups, baseline, fraction, window)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plot_paths = plot_curves(groups, out, baseline, fraction, window)

    notes = [
        "# ActorQ speedup report",
        "",
        (
            f"Target return: {fraction:g} x the best of the mean-over-seeds {baseline} eval curve "
            f"(trailing moving average over {window} evals, seeds aligned on actor steps); for a "
            "non-positive best, min + fraction x (best - min) of that curve."
        ),
        (
            "Time-to-target: first eval whose smoothed return reaches the target, per seed; "
            "columns show the mean over seeds. Speedup = mean baseline time / mean quantized "
            "time, only when every seed of both precisions reached the target."
        ),
        (
            "Final return: mean of the last 10% of evals per seed, mean ± std (ddof=0) over seeds. "
            "Energy and CO2: whole-run totals from energy.json, mean over seeds."
        ),
        "",
        markdown_table(rows),
    ]
    resumes = {str(d): read_resumes(d) for d in dirs}
    resumed = {d: r for d, r in resumes.items() if r}
    if resumed:
        # A resumed run's wall time spans sessions (and possibly machines): say which ones.
        notes += ["", "Resumed runs (`resumes.jsonl`): "
                  + "; ".join(f"`{d}` at actor steps "
                              + ", ".join(f"{x.get('actor_steps') or 0:,}" for x in r)
                              for d, r in resumed.items()), ""]
    md_path = out / "speedup.md"
    md_path.write_text("\n".join(notes))
    payload = {
        "baseline": baseline,
        "fraction": fraction,
        "window": window,
        "runs": [str(d) for d in dirs],
        "plots": [p.name for p in plot_paths],
        "rows": rows,
        "resumes": resumed,
    }
    (out / "speedup.json").write_text(
        json.dumps(json_safe(payload), indent=2, allow_nan=False) + "\n"
    )
    return md_path


def mean_breakdowns(
    run_dirs: Sequence[str | Path],
) -> dict[tuple[str, str], dict[str, dict[str, float]]]:
    """``{(agent, task): {precision: {section: seconds}}}`` from the runs' ``breakdown.json``:
    each section's seconds averaged over a run's actors, then over the runs (seeds). A mixed
    fleet's actors are split by their own precision (``"fp32 in fleet:fp32+int8"``).

    Runs without a ``breakdown.json`` are skipped (logged).
    """
    per_run: dict[tuple[str, str], dict[str, list[dict[str, float]]]] = {}
    for run_dir in run_dirs:
        path = Path(run_dir)
        if not (path / "breakdown.json").is_file():
            logging.warning("no breakdown.json in %s; left out of the breakdown plot", path)
            continue
        config = read_json_object(path / "config.json")
        actors = list(read_json_object(path / "breakdown.json").values())
        if not actors:
            continue
        label = run_label(config)
        # A mixed fleet's actors are grouped by their own precision ("fp32 in fleet:fp32+int8").
        groups: dict[str, list[dict[str, Any]]] = {}
        for actor in actors:
            own = str(actor.get("precision") or config["quantizer"])
            groups.setdefault(f"{own} in {label}" if label.startswith("fleet:") else label,
                              []).append(actor)
        key = (str(config["agent"]), str(config["task"]))
        for name, members in groups.items():
            means = {s: float(np.mean([float(a.get(f"{s}_s", 0.0)) for a in members]))
                     for s in BREAKDOWN_SECTIONS}
            per_run.setdefault(key, {}).setdefault(name, []).append(means)
    return {
        key: {
            q: {s: float(np.mean([m[s] for m in runs])) for s in BREAKDOWN_SECTIONS}
            for q, runs in by_q.items()
        }
        for key, by_q in per_run.items()
    }


def _breakdown_markdown(by_precision: dict[str, dict[str, float]]) -> str:
    header = ["precision", *(f"{s} s" for s in BREAKDOWN_SECTIONS), "total s"]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(["---", *["---:"] * (len(header) - 1)]) + "|"]
    for precision in precision_order(list(by_precision)):
        values = by_precision[precision]
        cells = [f"{values[s]:.3f}" for s in BREAKDOWN_SECTIONS]
        lines.append(f"| {precision} | " + " | ".join(cells)
                     + f" | {sum(values.values()):.3f} |")
    return "\n".join(lines) + "\n"


def write_speedup_report(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    fraction: float = 0.95,
    window: int = 10,
) -> Path:
    """``write_report`` plus per-(agent, task) breakdown plots and a breakdown table appended to
    ``speedup.md``; returns the path of ``speedup.md``."""
    md_path = write_report(run_dirs, out_dir, fraction=fraction, window=window)
    out = Path(out_dir)
    sections = []
    for (agent, task), by_precision in sorted(mean_breakdowns(run_dirs).items()):
        ordered = {p: by_precision[p] for p in precision_order(list(by_precision))}
        png = plot_breakdown(
            ordered,
            out / f"breakdown_{safe_name(agent)}_{safe_name(task)}.png",
            title=f"{agent.upper()} {task}: actor time (mean over actors and seeds)",
        )
        sections += [
            f"## Actor runtime breakdown: {agent.upper()} {task}",
            "",
            "Seconds per section, mean over each run's actors, then over seeds.",
            "",
            _breakdown_markdown(ordered),
            f"![breakdown]({png.name})",
            "",
        ]
    if sections:
        with md_path.open("a") as f:
            f.write("\n" + "\n".join(sections))
    return md_path
