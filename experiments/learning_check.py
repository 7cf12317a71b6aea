"""Does a preset learn, and how reliably? Runs seeds and reports when each reached a target.

    python -m experiments.learning_check --config=configs/dqn_actorq.py:cartpole_small \\
        --quantizers=fp32 --seeds=0,1,2,3,4 --threshold=475 --within_steps=50000 \\
        --out_dir=runs/learning_dqn_cartpole

Runs (or reuses, or resumes) every (quantizer, seed) into ``<out_dir>/<quantizer>_seed<seed>``,
then writes ``learning.md`` and ``learning.json`` there; ``--keep_records=<docs folder>``
also copies each run's records there as it ends (kilobytes), and the report with them. Per
run: the first evaluation at or above ``--threshold`` (actor steps, learner steps and wall
seconds: step counts compare across machines, seconds do not), the final evaluation, and the
best one. Per quantizer: how many seeds reached the threshold within ``--within_steps`` actor
steps and how many ended at or above it.
"""

from __future__ import annotations

import json
import math
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from absl import flags
from ml_collections import config_flags

from actorq.analysis.runs import HELD_WINDOW
from actorq.command_line import bad_input, check_writable_dir, parse_ints, run_absl
from actorq.metrics.loggers import read_jsonl, read_resumes, surviving_rows
from actorq.metrics.machine import machine_name
from launchpad_programs.study_runs import check_grid, run_grid


def first_reaching(evals: Sequence[dict[str, Any]], threshold: float,
                   key: str = "eval_return") -> dict[str, Any] | None:
    """The first evaluation row whose ``key`` is at least ``threshold``, or None."""
    for row in evals:
        if float(row[key]) >= threshold:
            return row
    return None


DRIFT_KEYS = ("policy_drift_disagreement", "policy_drift_action_distance")


def deployed_below_fp32_at(evals: Sequence[dict[str, Any]], threshold: float) -> int | None:
    """Evaluations where the learner's fp32 policy scored at/above ``threshold`` and the deployed
    package of the same version below it: what the actors' precision alone cost. None when the
    run has no fp32 score (fp32 actors, or ``eval_fp32`` off)."""
    pairs = [r for r in evals if "eval_return_fp32" in r]
    if not pairs:
        return None
    return sum(float(r["eval_return_fp32"]) >= threshold > float(r["eval_return"])
               for r in pairs)


def late_policy_drift(run_dir: Path, quantizer: str) -> float | None:
    """Mean online drift of the deployed precision over the second half of ``learner.jsonl``
    (DQN: greedy disagreement; continuous agents: action distance), or None if not logged."""
    rows = read_jsonl(run_dir / "learner.jsonl") if (run_dir / "learner.jsonl").exists() else []
    for key in (f"{name}/{quantizer}" for name in DRIFT_KEYS):
        values = [float(r[key]) for r in rows if key in r]
        if values:
            late = values[len(values) // 2:]
            return sum(late) / len(late)
    return None


def summarize_run(run_dir: Path, threshold: float) -> dict[str, Any]:
    """One run's row: first evaluation at/above ``threshold``, final and best evaluation, how
    many of the last ``HELD_WINDOW`` evaluations held it, what precision alone cost, and the
    late policy drift."""
    evals = surviving_rows(read_jsonl(run_dir / "eval.jsonl"))
    if not evals:
        raise ValueError(f"{run_dir} has no evaluations (eval.jsonl is empty)")
    config = json.loads((run_dir / "config.json").read_text())
    summary = json.loads((run_dir / "summary.json").read_text())
    hit = first_reaching(evals, threshold)
    final = evals[-1]
    best = max(evals, key=lambda row: float(row["eval_return"]))
    last = evals[-HELD_WINDOW:]
    quantizer = config["quantizer"]
    return {
        "run_dir": str(run_dir),
        "quantizer": config["quantizer"],
        "seed": int(config["seed"]),
        "first_hit_actor_steps": None if hit is None else int(hit["actor_steps"]),
        "first_hit_learner_steps": None if hit is None else int(hit["learner_steps"]),
        "first_hit_wall_s": None if hit is None else float(hit["wall_time_s"]),
        "final_return": float(final["eval_return"]),
        "final_actor_steps": int(final["actor_steps"]),
        "best_return": float(best["eval_return"]),
        "best_actor_steps": int(best["actor_steps"]),
        "learner_steps": int(summary["learner_steps"]),
        "wall_time_s": float(summary["wall_time_s"]),
        "eval_episodes": int(config["eval_episodes"]),
        "held_last": sum(float(r["eval_return"]) >= threshold for r in last),
        "held_window": len(last),
        "deployed_below_fp32_at": (None if quantizer == "fp32"
                                   else deployed_below_fp32_at(evals, threshold)),
        "evaluations": len(evals),
        # The "holds": the mean of the last HELD_WINDOW evaluations.
        "mean_last": sum(float(r["eval_return"]) for r in last) / len(last),
        "late_policy_drift": late_policy_drift(run_dir, quantizer),
        # Each resume of the run: the step it continued from and the config keys it changed.
        "resumes": [{"actor_steps": r.get("actor_steps"), "changed": sorted(r.get("changed", {}))}
                    for r in read_resumes(run_dir)],
    }


def summarize(rows: Sequence[dict[str, Any]], threshold: float,
              within_steps: int) -> dict[str, dict[str, Any]]:
    """Per quantizer: seeds, how many reached ``threshold`` within ``within_steps`` actor steps,
    and how many ended at or above it."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = out.setdefault(row["quantizer"], {"seeds": 0, "reached_within": 0,
                                                  "final_at_threshold": 0, "held_last": 0,
                                                  "held_window": 0})
        entry["seeds"] += 1
        hit = row["first_hit_actor_steps"]
        entry["reached_within"] += int(hit is not None and hit <= within_steps)
        entry["final_at_threshold"] += int(row["final_return"] >= threshold)
        entry["held_last"] += row.get("held_last", 0)
        entry["held_window"] += row.get("held_window", 0)
    return out


def markdown(rows: Sequence[dict[str, Any]], totals: dict[str, dict[str, Any]],
             threshold: float, within_steps: int, command: str) -> str:
    """The ``learning.md`` report."""
    lines = [
        f"# Learning check: threshold {threshold:g} within {within_steps:,} actor steps",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {machine_name()}",
        "",
        "| quantizer | seed | first >= threshold: actor steps | learner steps | wall s "
        f"| final return | best return (at step) | mean of last {HELD_WINDOW} "
        f"| last {HELD_WINDOW} evals >= threshold "
        "| fp32 >= threshold, deployed below | late policy drift | wall s total | resumes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        hit = r["first_hit_actor_steps"]
        if hit is None:
            reached = "never | - | -"
        else:
            reached = (f"{hit:,} | {r['first_hit_learner_steps']:,} | "
                       f"{r['first_hit_wall_s']:.0f}")
        below = r.get("deployed_below_fp32_at")
        below = "-" if below is None else f"{below} / {r['evaluations']}"
        drift = r.get("late_policy_drift")
        drift = "-" if drift is None else f"{drift:.4f}"
        resumes = r.get("resumes") or []
        resumed = "-" if not resumes else "; ".join(
            f"at {x['actor_steps'] or 0:,}"
            + (f" ({', '.join(x['changed'])})" if x["changed"] else "")
            for x in resumes)
        lines.append(
            f"| {r['quantizer']} | {r['seed']} | {reached} | "
            f"{r['final_return']:.1f} | {r['best_return']:.1f} ({r['best_actor_steps']:,}) | "
            f"{r.get('mean_last', float('nan')):.1f} | "
            f"{r.get('held_last', 0)} / {r.get('held_window', 0)} | {below} | {drift} | "
            f"{r['wall_time_s']:.0f} | {resumed} |")
    lines += ["", "| quantizer | seeds | reached within budget | final >= threshold "
              f"| last {HELD_WINDOW} evals >= threshold |", "|---|---:|---:|---:|---:|"]
    for spec, t in totals.items():
        lines.append(f"| {spec} | {t['seeds']} | {t['reached_within']} | "
                     f"{t['final_at_threshold']} | {t['held_last']} / {t['held_window']} |")
    lines += ["", "Late policy drift: the mean over the second half of `learner.jsonl` of the "
              "deployed precision's online drift from the learner's fp32 policy (DQN: greedy "
              "disagreement on the fixed replay batch; D4PG/SAC: action distance)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    del argv
    config = _CONFIG.value
    out_dir = Path(_OUT_DIR.value)
    with bad_input():
        seeds = parse_ints(_SEEDS.value, "seeds")
        check_grid(config, _QUANTIZERS.value, seeds, out_dir)
        if not math.isfinite(_THRESHOLD.value):
            raise ValueError(f"--threshold must be finite, got {_THRESHOLD.value}")
        if _WITHIN.value < 0:
            raise ValueError(f"--within_steps must be >= 0, got {_WITHIN.value}")
        if _KEEP.value:
            check_writable_dir(_KEEP.value, "--keep_records")
    run_dirs = run_grid(config, _QUANTIZERS.value, seeds, out_dir, reuse=_REUSE.value,
                        keep=_KEEP.value or None)
    rows = [summarize_run(path, _THRESHOLD.value) for path in run_dirs]
    within = _WITHIN.value or int(config.max_actor_steps)
    totals = summarize(rows, _THRESHOLD.value, within)
    command = "python -m experiments.learning_check " + shlex.join(sys.argv[1:])
    (out_dir / "learning.json").write_text(json.dumps(
        {"threshold": _THRESHOLD.value, "within_steps": within, "machine": machine_name(),
         "runs": rows, "totals": totals}, indent=2) + "\n")
    text = markdown(rows, totals, _THRESHOLD.value, within, command)
    (out_dir / "learning.md").write_text(text)
    if _KEEP.value:
        for name in ("learning.md", "learning.json"):
            shutil.copy2(out_dir / name, Path(_KEEP.value) / name)
    print(text)


if __name__ == "__main__":
    _CONFIG = config_flags.DEFINE_config_file("config", None, "experiment config (preset)")
    _QUANTIZERS = flags.DEFINE_list("quantizers", ["fp32"], "actor precisions")
    _SEEDS = flags.DEFINE_list("seeds", ["0", "1", "2", "3", "4"], "seeds")
    _THRESHOLD = flags.DEFINE_float("threshold", None, "target evaluation return", required=True)
    _WITHIN = flags.DEFINE_integer("within_steps", 0,
                                   "actor-step budget for reaching it (0: max_actor_steps)")
    _OUT_DIR = flags.DEFINE_string("out_dir", None, "where runs and the report go",
                                   required=True)
    _REUSE = flags.DEFINE_bool("reuse", True, "reuse (or resume) runs already in out_dir")
    _KEEP = flags.DEFINE_string("keep_records", "", "also copy each run's config, logs and "
                                "summary here as it ends, and the report (a docs folder)")
    flags.mark_flag_as_required("config")
    run_absl(main)
