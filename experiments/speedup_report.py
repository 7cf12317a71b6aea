"""Paper-style speedup report (QuaRL Table 4 + Fig. 9) from finished runs, or run them first.

Read finished run directories:

    python -m experiments.speedup_report --runs_root=runs/cartpole --out_dir=reports/cartpole
    python -m experiments.speedup_report --run_dirs=runs/a,runs/b --out_dir=reports/ab

Or run every (quantizer, seed) into ``<out_dir>/<quantizer>_seed<seed>`` first (finished runs are
reused, interrupted ones resumed), then report:

    python -m experiments.speedup_report --config=configs/dqn_actorq.py:cartpole_small \\
        --quantizers=fp32,int8 --seeds=0,1,2 --out_dir=runs/speedup_cartpole

Writes ``speedup.md``/``speedup.json``/learning curves (``actorq.analysis.report``), plus one
actor runtime breakdown plot per (agent, task): stacked seconds per section, one bar per
precision, mean over actors and seeds. Energy/CO2 columns come from each run's ``energy.json``.

This module also holds :func:`run_or_load`, the run-or-reuse step the other study scripts share.
Its flags are defined only when it runs as a script, so the helpers import without side effects.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import ml_collections
import numpy as np
from absl import app, flags, logging

from actorq.analysis.plots import BREAKDOWN_SECTIONS, plot_breakdown, precision_order, safe_name
from actorq.analysis.ptq import parse_quantizers
from actorq.analysis.report import find_run_dirs, write_report
from actorq.analysis.speedup import run_label
from launchpad_programs.run_directory import config_to_dict

RunStatus = Literal["missing", "finished", "partial"]
# Fields that may differ between a requested config and a reusable run (where it lives).
_IGNORED_CONFIG_KEYS = frozenset({"run_dir"})
# Fields added after runs were saved, with the value that reproduces the code from before them:
# a saved run lacking one matches a request for that value (so adding a switch, off by
# default, does not orphan every stored run).
_ADDED_FIELDS_OFF: dict[str, Any] = {"learner.target_update_tau": 0.0}


class RunInterrupted(RuntimeError):
    """A run stopped before ``max_actor_steps`` (Ctrl-C/SIGTERM); re-running resumes it."""


def run_status(run_dir: str | Path) -> RunStatus:
    """``missing`` (absent or empty dir), ``finished`` (a summary.json from an uninterrupted run)
    or ``partial`` (anything else: crashed, interrupted or still running)."""
    path = Path(run_dir)
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        return "missing"
    summary = path / "summary.json"
    if summary.is_file():
        try:
            data = json.loads(summary.read_text())
        except json.JSONDecodeError:
            return "partial"
        if isinstance(data, dict) and data.get("interrupted") is False:
            return "finished"
    return "partial"


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


def config_differences(config: ml_collections.ConfigDict, run_dir: str | Path) -> list[str]:
    """Dotted config fields whose value differs from the run's saved ``config.json``."""
    saved = _flatten(json.loads((Path(run_dir) / "config.json").read_text()))
    wanted = _flatten(config_to_dict(config))
    for key, off in _ADDED_FIELDS_OFF.items():
        if key in wanted:
            saved.setdefault(key, off)
    keys = (set(saved) | set(wanted)) - _IGNORED_CONFIG_KEYS
    return sorted(k for k in keys if saved.get(k, "<absent>") != wanted.get(k, "<absent>"))


def run_or_load(
    config: ml_collections.ConfigDict, run_dir: str | Path, reuse: bool = True
) -> Path:
    """Makes sure ``run_dir`` holds a finished run of ``config``; returns its path.

    * nothing there: runs ``config`` into ``run_dir`` (``config.run_dir`` is set to it);
    * a finished run with the same config (every field but ``run_dir``): reused as is;
    * an unfinished run with the same config: resumed from its newest checkpoint.

    Raises:
      FileExistsError: ``run_dir`` holds a run (or other files) and ``reuse`` is False.
      ValueError: the run there was made with a different config (the fields are listed).
      RunInterrupted: the run was interrupted (Ctrl-C); running again resumes it.
    """
    # Launchers are imported lazily so that reading finished runs never imports them.
    from launchpad_programs.launch import run_experiment

    path = Path(run_dir)
    config = config.copy_and_resolve_references()
    config.run_dir = str(path)
    status = run_status(path)
    if status != "missing":
        if not reuse:
            raise FileExistsError(
                f"{path} already holds a run; pass --reuse to reuse (or resume) it, or choose "
                "another --out_dir"
            )
        if not (path / "config.json").is_file():
            raise FileExistsError(f"{path} is not empty but holds no run (no config.json)")
        different = config_differences(config, path)
        if different:
            raise ValueError(
                f"{path} holds a run with a different config (fields: {', '.join(different)}); "
                "choose another --out_dir or delete that run"
            )
        if status == "finished":
            logging.info("reusing finished run %s", path)
            return path
        if not _has_checkpoint(path):
            # Resuming without a checkpoint would restart at step 0 and append to the old logs.
            raise FileExistsError(
                f"{path} holds an unfinished run with no checkpoint to resume; delete it to "
                "start that run over"
            )
        logging.info("resuming unfinished run %s", path)
    summary = run_experiment(config, resume=status == "partial")
    if summary.get("interrupted"):
        raise RunInterrupted(f"run {path} was interrupted; run the same command to resume it")
    return path


def _has_checkpoint(run_dir: Path) -> bool:
    # Orbax names step directories by the step number.
    checkpoints = run_dir / "checkpoints"
    return checkpoints.is_dir() and any(p.name.isdigit() for p in checkpoints.iterdir())


def parse_ints(text: str | Sequence[str | int], name: str) -> list[int]:
    """``"0,1,2"`` (or a list of strings/ints) -> ``[0, 1, 2]``; clear errors otherwise."""
    items = text.split(",") if isinstance(text, str) else list(text)
    values: list[int] = []
    for item in items:
        item_text = str(item).strip()
        if not item_text:
            continue
        try:
            values.append(int(item_text))
        except ValueError:
            raise ValueError(f"--{name}: {item_text!r} is not an integer") from None
    if not values:
        raise ValueError(f"--{name} is empty")
    if len(set(values)) != len(values):
        raise ValueError(f"--{name} has duplicates: {values}")
    return values


def run_grid(
    config: ml_collections.ConfigDict,
    quantizers: str | Sequence[str],
    seeds: str | Sequence[int],
    out_dir: str | Path,
    reuse: bool = True,
) -> list[Path]:
    """Runs (or reuses) ``config`` for every (quantizer, seed) into
    ``out_dir/<quantizer>_seed<seed>``; returns the run directories."""
    specs = parse_quantizers(quantizers, include_baseline=False)
    seed_list = parse_ints(seeds, "seeds")
    dirs = []
    for spec in specs:
        for seed in seed_list:
            run_config = config.copy_and_resolve_references()
            run_config.quantizer = spec
            run_config.seed = seed
            dirs.append(run_or_load(run_config, Path(out_dir) / f"{safe_name(spec)}_seed{seed}",
                                    reuse))
    return dirs


def read_json_object(path: Path) -> dict[str, Any]:
    """A run file holding one JSON object; clear errors when it is missing or not an object."""
    if not path.is_file():
        raise FileNotFoundError(f"missing run file: {path}")
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object in {path}")
    return data


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


def _define_flags() -> None:
    from ml_collections import config_flags

    config_flags.DEFINE_config_file(
        "config", None, "Run mode: experiment config (e.g. configs/dqn_actorq.py:cartpole_small)."
    )
    flags.DEFINE_list("run_dirs", [], "Read mode: finished run directories.")
    flags.DEFINE_string("runs_root", "", "Read mode: every run directory under this folder.")
    flags.DEFINE_list("quantizers", ["fp32", "int8"], "Run mode: actor precisions.")
    flags.DEFINE_list("seeds", ["0"], "Run mode: seeds.")
    flags.DEFINE_string("out_dir", "", "Report folder (run mode: also where runs go). Read mode "
                        "default: --runs_root.")
    flags.DEFINE_bool("reuse", True, "Run mode: reuse finished runs in --out_dir and resume "
                      "unfinished ones (--noreuse refuses to touch existing runs).")
    flags.DEFINE_float("fraction", 0.95, "Target = fraction x fp32's best smoothed return.")
    flags.DEFINE_integer("window", 10, "Smoothing window (evaluations).")


def main(argv: list[str]) -> None:
    """Dispatches read mode (--run_dirs/--runs_root) or run mode (--config)."""
    del argv
    f = flags.FLAGS
    read_mode = bool(f.run_dirs or f.runs_root)
    if read_mode and f.config is not None:
        raise app.UsageError("give either --config (run mode) or --run_dirs/--runs_root (read)")
    if f.run_dirs and f.runs_root:
        raise app.UsageError("give --run_dirs or --runs_root, not both")
    if read_mode:
        dirs = [Path(d) for d in f.run_dirs] if f.run_dirs else find_run_dirs(f.runs_root)
        if not dirs:
            raise app.UsageError(f"no run directories (config.json) under {f.runs_root}")
        out_dir = f.out_dir or f.runs_root
        if not out_dir:
            raise app.UsageError("--out_dir is required with --run_dirs")
    elif f.config is not None:
        if not f.out_dir:
            raise app.UsageError("--out_dir is required in run mode")
        out_dir = f.out_dir
        dirs = run_grid(f.config, f.quantizers, f.seeds, out_dir, f.reuse)
    else:
        raise app.UsageError("give --config (run mode) or --run_dirs/--runs_root (read mode)")
    md = write_speedup_report(dirs, out_dir, f.fraction, f.window)
    print(md.read_text())


if __name__ == "__main__":
    _define_flags()
    app.run(main)
