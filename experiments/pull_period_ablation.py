"""Pull-period x broadcast-precision ablation of actor time (QuaRL Fig. 8).

For every pull period and broadcast precision the same config is run (short) into
``<out_dir>/pull<period>_<quantizer>_seed<seed>`` (finished runs are reused) and each actor's time
is split into communication (``pull`` + ``deserialize`` + ``load``) and computation (``inference``
+ ``env``), with the bytes it pulled:

    python -m experiments.pull_period_ablation --config=configs/dqn_actorq.py:cartpole_small \\
        --pull_periods=30,300 --quantizers=fp32,int8 --max_actor_steps=5000 \\
        --out_dir=runs/pull_ablation

Writes ``pull_period.md`` (table), ``pull_period.json`` and one stacked-bar PNG per (agent, task).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ml_collections
import numpy as np
from absl import flags
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from actorq.analysis.plots import precision_order, safe_name
from actorq.analysis.ptq import parse_quantizers
from actorq.analysis.report import json_safe
from actorq.analysis.speedup import read_json_object
from actorq.command_line import bad_input, check_writable_dir, parse_ints, run_absl
from launchpad_programs.launch import check_config
from launchpad_programs.study_runs import run_or_load

COMMUNICATION: tuple[str, ...] = ("pull", "deserialize", "load")
COMPUTATION: tuple[str, ...] = ("inference", "env")


@dataclasses.dataclass(frozen=True)
class RunSplit:
    """One run's actor time split, averaged over its actors (seconds, bytes, counts)."""

    run_dir: str
    agent: str
    task: str
    pull_period: int
    quantizer: str
    seed: int
    num_actors: int
    communication_s: float
    computation_s: float
    bytes_pulled: float
    packages_loaded: float
    env_steps: float


def run_split(run_dir: str | Path) -> RunSplit:
    """Reads a run's ``config.json`` and ``breakdown.json`` into a :class:`RunSplit`."""
    path = Path(run_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"run directory not found: {path}")
    config = read_json_object(path / "config.json")
    actors = list(read_json_object(path / "breakdown.json").values())
    if not actors:
        raise ValueError(f"{path / 'breakdown.json'} records no actors")

    def mean(key: str) -> float:
        return float(np.mean([float(a.get(key, 0.0)) for a in actors]))

    return RunSplit(
        run_dir=str(path),
        agent=str(config["agent"]),
        task=str(config["task"]),
        pull_period=int(config["pull_period"]),
        quantizer=str(config["quantizer"]),
        seed=int(config["seed"]),
        num_actors=len(actors),
        communication_s=sum(mean(f"{s}_s") for s in COMMUNICATION),
        computation_s=sum(mean(f"{s}_s") for s in COMPUTATION),
        bytes_pulled=mean("bytes_pulled"),
        # Each loaded package is deserialized once; pull calls also count no-new-version checks.
        packages_loaded=mean("deserialize_calls"),
        env_steps=mean("env_steps"),
    )


def ablation_rows(run_dirs: Sequence[str | Path]) -> list[dict[str, Any]]:
    """One row per (agent, task, pull period, precision): per-actor means over seeds.

    ``communication_fraction`` + ``computation_fraction`` = 1 (both None if nothing was timed).
    """
    groups: dict[tuple[str, str, int, str], list[RunSplit]] = {}
    for run_dir in run_dirs:
        split = run_split(run_dir)
        key = (split.agent, split.task, split.pull_period, split.quantizer)
        groups.setdefault(key, []).append(split)
    rows = []
    ordered = sorted(groups, key=lambda k: (k[0], k[1], k[2]))
    for agent, task, period in dict.fromkeys((k[0], k[1], k[2]) for k in ordered):
        precisions = [k[3] for k in ordered if k[:3] == (agent, task, period)]
        for precision in precision_order(precisions):
            splits = sorted(groups[(agent, task, period, precision)], key=lambda s: s.seed)
            comm = float(np.mean([s.communication_s for s in splits]))
            comp = float(np.mean([s.computation_s for s in splits]))
            total = comm + comp
            packages = float(np.mean([s.packages_loaded for s in splits]))
            pulled = float(np.mean([s.bytes_pulled for s in splits]))
            rows.append({
                "agent": agent,
                "task": task,
                "pull_period": period,
                "precision": precision,
                "seeds": [s.seed for s in splits],
                "num_actors": [s.num_actors for s in splits],
                "env_steps": float(np.mean([s.env_steps for s in splits])),
                "communication_s": comm,
                "computation_s": comp,
                "communication_fraction": comm / total if total > 0 else None,
                "computation_fraction": comp / total if total > 0 else None,
                "bytes_pulled": pulled,
                "packages_loaded": packages,
                "bytes_per_package": pulled / packages if packages > 0 else None,
                "runs": [s.run_dir for s in splits],
            })
    return rows


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def ablation_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The rows of :func:`ablation_rows` as a Markdown table."""
    header = ["task", "algo", "pull period", "precision", "seeds", "env steps / actor",
              "communication s", "computation s", "communication %", "computation %",
              "packages loaded", "bytes pulled / actor", "bytes / package"]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(["---"] * 5 + ["---:"] * (len(header) - 5)) + "|"]
    for r in rows:
        per_package = r["bytes_per_package"]
        cells = [
            r["task"], str(r["agent"]).upper(), str(r["pull_period"]), r["precision"],
            ", ".join(str(s) for s in r["seeds"]), f"{r['env_steps']:.0f}",
            f"{r['communication_s']:.3f}", f"{r['computation_s']:.3f}",
            _pct(r["communication_fraction"]), _pct(r["computation_fraction"]),
            f"{r['packages_loaded']:.1f}", f"{r['bytes_pulled']:.0f}",
            "—" if per_package is None else f"{per_package:.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_ablation(rows: Sequence[dict[str, Any]], path: str | Path, title: str) -> Path:
    """Stacked bars per (pull period, precision): computation and communication, as fractions
    of actor time (left) and as seconds per actor (right); bytes pulled written above."""
    if not rows:
        raise ValueError("plot_ablation needs at least one row")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    labels = [f"T={r['pull_period']}\n{r['precision']}" for r in rows]
    comm = np.array([r["communication_s"] for r in rows])
    comp = np.array([r["computation_s"] for r in rows])
    totals = comm + comp
    safe = np.where(totals > 0, totals, 1.0)
    fig = Figure(figsize=(max(7.0, 1.6 * len(rows) + 3), 4.2))
    FigureCanvasAgg(fig)
    positions = np.arange(len(rows))
    for i, (values, ylabel) in enumerate(
        (((comp / safe, comm / safe), "fraction of actor time"), ((comp, comm), "seconds / actor"))
    ):
        ax = fig.add_subplot(1, 2, i + 1)
        ax.bar(positions, values[0], width=0.6, label="computation (inference + env)")
        ax.bar(positions, values[1], width=0.6, bottom=values[0],
               label="communication (pull + deserialize + load)")
        ax.set_xticks(positions, labels, fontsize="small")
        ax.set_ylabel(ylabel)
        if i == 1:
            for x, r, top in zip(positions, rows, comm + comp, strict=True):
                ax.annotate(f"{r['bytes_pulled'] / 1024:.0f} KiB", (x, top), ha="center",
                            va="bottom", fontsize="x-small")
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize="small")
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout(rect=(0.0, 0.07, 1.0, 1.0))  # leave the bottom strip to the legend
    fig.savefig(out, dpi=120, bbox_inches="tight")
    return out


def plan_ablation(
    config: ml_collections.ConfigDict,
    pull_periods: str | Sequence[int],
    quantizers: str | Sequence[str],
    seeds: str | Sequence[int],
    out_dir: str | Path,
    max_actor_steps: int | None = None,
) -> list[tuple[ml_collections.ConfigDict, Path]]:
    """Every (pull period, precision, seed) run of ``config`` as ``(config, run dir)``, each
    checked (``check_config``), with ``out_dir`` writable: bad input fails here, before any run
    (ValueError/OSError naming it)."""
    periods = parse_ints(pull_periods, "pull_periods")
    if any(p < 1 for p in periods):
        raise ValueError(f"--pull_periods must be >= 1, got {periods}")
    specs = parse_quantizers(quantizers, include_baseline=False)
    seed_list = parse_ints(seeds, "seeds")
    if max_actor_steps is not None and max_actor_steps < 1:
        raise ValueError(f"--max_actor_steps must be >= 1, got {max_actor_steps}")
    out = check_writable_dir(out_dir, "--out_dir")
    plan = []
    for period in periods:
        for spec in specs:
            for seed in seed_list:
                run_config = config.copy_and_resolve_references()
                run_config.pull_period = period
                run_config.quantizer = spec
                run_config.seed = seed
                if max_actor_steps is not None:
                    run_config.max_actor_steps = max_actor_steps
                check_config(run_config)
                plan.append((run_config, out / f"pull{period}_{safe_name(spec)}_seed{seed}"))
    return plan


def run_ablation(
    config: ml_collections.ConfigDict,
    pull_periods: str | Sequence[int],
    quantizers: str | Sequence[str],
    seeds: str | Sequence[int],
    out_dir: str | Path,
    max_actor_steps: int | None = None,
    reuse: bool = True,
) -> list[Path]:
    """Runs (or reuses) every run of :func:`plan_ablation`; returns their directories."""
    plan = plan_ablation(config, pull_periods, quantizers, seeds, out_dir, max_actor_steps)
    return [run_or_load(run_config, path, reuse) for run_config, path in plan]


def write_ablation_report(run_dirs: Sequence[str | Path], out_dir: str | Path) -> Path:
    """Writes ``pull_period.md``, ``pull_period.json`` and the PNG(s); returns the .md path."""
    rows = ablation_rows(run_dirs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = []
    for agent, task in dict.fromkeys((r["agent"], r["task"]) for r in rows):
        group = [r for r in rows if (r["agent"], r["task"]) == (agent, task)]
        plots.append(plot_ablation(
            group, out / f"pull_period_{safe_name(agent)}_{safe_name(task)}.png",
            f"{agent.upper()} {task}: actor communication vs computation",
        ))
    text = [
        "# Pull period x broadcast precision: actor time",
        "",
        "Per actor (mean over a run's actors, then over seeds): communication = pull + "
        "deserialize + load seconds, computation = inference + env seconds; the two fractions "
        "are of their sum. With the single-process launcher a pull also includes the learner "
        "quantizing a new policy version on demand. Bytes are the policy packages an actor "
        "received; packages loaded counts new versions installed (pulls that found no newer "
        "version move no bytes).",
        "",
        ablation_markdown(rows),
        *(f"![pull period]({p.name})" for p in plots),
        "",
    ]
    md = out / "pull_period.md"
    md.write_text("\n".join(text))
    payload = {"rows": rows, "plots": [p.name for p in plots]}
    (out / "pull_period.json").write_text(json.dumps(json_safe(payload), indent=2) + "\n")
    return md


def _define_flags() -> None:
    from ml_collections import config_flags

    config_flags.DEFINE_config_file(
        "config", "configs/dqn_actorq.py:cartpole_small", "Experiment config to ablate."
    )
    flags.DEFINE_list("pull_periods", ["30", "300"], "Actor pull periods (actor steps).")
    flags.DEFINE_list("quantizers", ["fp32", "int8"], "Broadcast precisions.")
    flags.DEFINE_list("seeds", ["0"], "Seeds.")
    flags.DEFINE_integer("max_actor_steps", 5000, "Actor steps per run (0: the config's).")
    flags.DEFINE_string("out_dir", "runs/pull_period_ablation", "Where runs and report go.")
    flags.DEFINE_bool("reuse", True, "Reuse finished runs in --out_dir, resume unfinished ones.")
    flags.DEFINE_list("run_dirs", [], "Report these finished runs instead of running.")


def main(argv: list[str]) -> None:
    """Runs (or reads) the ablation and prints its table."""
    del argv
    f = flags.FLAGS
    with bad_input():
        if f.run_dirs:
            dirs = [Path(d) for d in f.run_dirs]
            for d in dirs:
                if not (d / "config.json").is_file():
                    raise FileNotFoundError(f"--run_dirs: {d} holds no run (no config.json)")
        else:
            plan_ablation(f.config, f.pull_periods, f.quantizers, f.seeds, f.out_dir,
                          f.max_actor_steps or None)
        check_writable_dir(f.out_dir, "--out_dir")
    if not f.run_dirs:
        dirs = run_ablation(f.config, f.pull_periods, f.quantizers, f.seeds, f.out_dir,
                            f.max_actor_steps or None, f.reuse)
    print(write_ablation_report(dirs, f.out_dir).read_text())


if __name__ == "__main__":
    _define_flags()
    run_absl(main)
