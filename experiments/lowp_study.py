"""Björck et al. (2021)'s low-precision SAC experiments as one command.

    python -m experiments.lowp_study --config=configs/sac_actorq.py:cartpole_balance_small \\
        --seeds=0,1 --out_dir=runs/lowp_sac_cartpole_balance

Runs (or reuses, or resumes: :func:`launchpad_programs.study_runs.run_or_load`) three things, then
writes ``lowp.md`` and ``lowp.json`` in ``--out_dir``:

* the main table: each ``--variants`` learner setting x each seed at the config's full budget,
  into ``<out_dir>/main/<variant>_seed<seed>``. A variant is ``fp32``, ``<precision>_naive``
  (``lowp_fixes=none``), ``<precision>_fixed`` (``lowp_fixes=all``) or ``<precision>_amp``
  (supervised learning's mixed precision: fp32 master weights, compute in ``<precision>``,
  dynamic loss scaling);
* the ablation (the paper's ablation table): fp16 with all fixes but one, for each of the six
  fixes, plus fp16 with all fixes and with none as references, one seed at ``--ablation_steps``,
  into ``<out_dir>/ablation/minus_<fix>``, ``.../fp16_all`` and ``.../fp16_none``;
* the bytes of the learner's state (parameters, target parameters, optimizer moments, loss
  scales, Kahan buffers) per precision, from a freshly built ``SACLearner`` (no training);
* one "fully low-precision ActorQ" comparison (``--actorq_comparison``): int8 actors + fp16
  learner with every fix vs fp32 actors + fp32 learner, first seed, full budget, into
  ``<out_dir>/actorq/`` (a main-table run with the same config is reused instead).

``--keep_records=<docs folder>`` copies each run's small record files (config, evaluations,
learner log, summary, a failure's error) there in the same layout as soon as the run ends;
``--out_dir=<that folder>`` later rebuilds the report from them on any machine, with nothing
retrained, and a study cut short resumes from them once they are copied back into its out_dir.

``--report_only`` starts no run: it writes the report of the runs in ``--out_dir`` as they stand,
with the unfinished ones (and those not started) as pending, for a study that spans sessions.

A run that raises (naive fp16 SAC goes NaN within its first learner calls; the NaN policy's
actions then make the environment raise) does not stop the study: it is recorded as ``failed``
with its error in ``<run_dir>/failure.json``, and later invocations report it from there
instead of running it again (delete the run directory to retry it). A run that finishes with a
learner row reporting non-finite parameters is ``diverged``. Ctrl-C still stops the study; the
same command resumes the interrupted run.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shlex
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ml_collections
import numpy as np
from absl import flags, logging

from actorq.agents.sac.config import FIX_NAMES, PRECISIONS
from actorq.analysis import runs
from actorq.analysis.report import json_safe
from actorq.analysis.runs import HELD_WINDOW, config_differences, config_to_dict, run_status
from actorq.command_line import bad_input, check_writable_dir, parse_ints, run_absl
from actorq.metrics.loggers import read_jsonl, surviving_rows
from actorq.metrics.machine import machine_name
from launchpad_programs.study_runs import check_grid, records_kept_if_stopped

FAILURE_FILE = "failure.json"
# What the report reads of a run: the common records, the learner's log (skipped steps, loss
# scales, non-finite parameters) and a failed run's error.
RECORD_FILES = (*runs.RECORD_FILES, FAILURE_FILE)
# "Within 5% of fp32": a final-return mean at most 5% below fp32's. Above it counts too: a
# low-precision learner that beats fp32 on these seeds has not lost to it.
WITHIN = 0.05
DEFAULT_VARIANTS = "fp32,fp16_naive,fp16_fixed,bf16_fixed"


# The mixed-precision baseline's dynamic loss scale: PyTorch GradScaler's growth interval, and
# fp16's largest power of two below its max as the start (it halves on the first overflows).
AMP_LOSS_SCALE_INIT = 2.0**15
AMP_INCREASE_EVERY = 2000


@dataclasses.dataclass(frozen=True)
class Variant:
    """A learner setting: ``precision`` and ``lowp_fixes`` (None: keep the config's), and
    whether the weights stay fp32 (``master_weights``: the mixed-precision baseline)."""

    name: str
    precision: str
    lowp_fixes: str | None
    master_weights: bool = False


def parse_variants(text: str | Sequence[str]) -> list[Variant]:
    """``"fp32,fp16_naive,fp16_fixed"`` -> variants; ``<p>_naive`` is ``lowp_fixes=none``,
    ``<p>_fixed`` is ``lowp_fixes=all`` and ``<p>_amp`` fp32 master weights with dynamic loss
    scaling alone (``lowp_fixes=loss_scaling``) for a low precision ``p``; plain ``fp32`` keeps
    the config's fixes (they do not apply in fp32)."""
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text)]
    names = [n for n in names if n]
    if not names:
        raise ValueError("--variants is empty")
    if len(set(names)) != len(names):
        raise ValueError(f"--variants has duplicates: {names}")
    low = [p for p in PRECISIONS if p != "fp32"]
    kinds = ("naive", "fixed", "amp")
    valid = ["fp32", *(f"{p}_{kind}" for p in low for kind in kinds)]
    variants = []
    for name in names:
        if name == "fp32":
            variants.append(Variant(name, "fp32", None))
            continue
        precision, _, kind = name.partition("_")
        if precision not in low or kind not in kinds:
            raise ValueError(f"unknown variant {name!r}; valid: {', '.join(valid)}")
        fixes = {"naive": "none", "fixed": "all", "amp": "loss_scaling"}[kind]
        variants.append(Variant(name, precision, fixes, master_weights=kind == "amp"))
    return variants


def learner_config(
    config: ml_collections.ConfigDict,
    precision: str,
    lowp_fixes: str | None,
    seed: int | None = None,
    max_actor_steps: int | None = None,
    quantizer: str | None = None,
    master_weights: bool = False,
) -> ml_collections.ConfigDict:
    """A copy of ``config`` with the learner's precision/fixes (and optionally seed, budget and
    actor quantizer) replaced; ``None`` keeps the config's value. ``master_weights`` makes it the
    mixed-precision baseline, with its loss-scale schedule."""
    out = config.copy_and_resolve_references()
    out.learner.precision = precision
    out.learner.master_weights = master_weights
    if master_weights:
        out.learner.loss_scale_init = AMP_LOSS_SCALE_INIT
        out.learner.loss_scale_increase_every = AMP_INCREASE_EVERY
    if lowp_fixes is not None:
        out.learner.lowp_fixes = lowp_fixes
    if seed is not None:
        out.seed = int(seed)
    if max_actor_steps is not None:
        out.max_actor_steps = int(max_actor_steps)
    if quantizer is not None:
        out.quantizer = quantizer
    return out


def ablation_settings() -> list[tuple[str, str]]:
    """``(name, lowp_fixes)`` of the ablation: ``minus_<fix>`` for each fix, then the two
    references ``fp16_all`` and ``fp16_none``."""
    rows = [(f"minus_{fix}", ",".join(f for f in FIX_NAMES if f != fix)) for fix in FIX_NAMES]
    return [*rows, ("fp16_all", "all"), ("fp16_none", "none")]


def _same_config(a: ml_collections.ConfigDict, b: ml_collections.ConfigDict) -> bool:
    da, db = config_to_dict(a), config_to_dict(b)
    da.pop("run_dir", None)
    db.pop("run_dir", None)
    return da == db


def run_recording_failures(
    config: ml_collections.ConfigDict, run_dir: str | Path, reuse: bool = True,
    keep: Path | None = None, report_only: bool = False,
) -> Path:
    """:func:`_run_or_record_failure`; then, with ``keep``, the run's :data:`RECORD_FILES` are
    copied to ``keep/<its folder>/<its name>`` (``main/``, ``ablation/``, ``actorq/``) as soon
    as it ends, so a study cut short keeps every run that finished (or failed), and the records so
    far of the run it stopped in.

    ``report_only``: runs nothing and copies nothing; only checks that a run already in
    ``run_dir`` has ``config`` (:func:`summarize_run` then reports an unfinished one as pending).
    """
    if report_only:
        _check_same_config(config, Path(run_dir))
        return Path(run_dir)
    keep_dir = None if keep is None else keep / Path(run_dir).parent.name
    with records_kept_if_stopped(run_dir, keep_dir):
        path = _run_or_record_failure(config, run_dir, reuse)
    if keep_dir is not None:
        runs.copy_run_records([path], keep_dir, RECORD_FILES, finished_only=False)
    return path


def _run_or_record_failure(
    config: ml_collections.ConfigDict, run_dir: str | Path, reuse: bool = True
) -> Path:
    """:func:`run_or_load`, except that a run raising an error is recorded, not re-raised.

    The error (type, message, traceback tail) goes to ``<run_dir>/failure.json``; a later call
    finds that file and returns at once (the run is deterministic: resuming it would fail again).
    Errors about the run directory itself (a different config there, ``--noreuse``) and
    interruptions (Ctrl-C: the same command resumes) are re-raised.
    """
    # Looked up at call time so that tests can stand in for the runs.
    from launchpad_programs.study_runs import RunInterrupted, run_or_load

    path = Path(run_dir)
    if (_check_same_config(config, path) and reuse and (path / FAILURE_FILE).is_file()
            and run_status(path) == "partial"):
        logging.info("reusing failed run %s", path)
        return path
    try:
        return run_or_load(config, path, reuse)
    except (RunInterrupted, FileExistsError, KeyboardInterrupt):
        raise
    except Exception as error:  # noqa: BLE001 - a diverging run is a result, not a crash
        logging.warning("run %s failed: %s: %s", path, type(error).__name__, error)
        path.mkdir(parents=True, exist_ok=True)
        (path / FAILURE_FILE).write_text(json.dumps({
            "error_type": type(error).__name__,
            "error": str(error),
            "traceback": traceback.format_exc()[-3000:],
        }, indent=2) + "\n")
        return path


def _check_same_config(config: ml_collections.ConfigDict, path: Path) -> bool:
    """Whether ``path`` holds a run (with its ``config.json``); raises ValueError naming the
    fields where that run's config differs from ``config``."""
    if run_status(path) == "missing" or not (path / "config.json").is_file():
        return False
    wanted = config.copy_and_resolve_references()
    wanted.run_dir = str(path)
    different = config_differences(wanted, path)
    if different:
        raise ValueError(
            f"{path} holds a run with a different config (fields: {', '.join(different)}); "
            "choose another --out_dir or delete that run")
    return True


def _finite_or_none(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def summarize_run(run_dir: str | Path, name: str,
                  config: ml_collections.ConfigDict | None = None) -> dict[str, Any]:
    """One run's row (reads ``config.json``, ``eval.jsonl``, ``learner.jsonl``, ``summary.json``
    and ``failure.json`` when present).

    ``status`` is ``failed`` (the run raised: ``failure.json``), ``diverged`` (finished, but a
    learner row reported non-finite parameters), ``ok``, or, only when the run's ``config`` is
    given (``--report_only``), ``pending``: neither finished nor failed, or not started (no
    ``config.json``: the row then takes ``config`` and shows no progress). ``final_return`` is
    the last evaluation of a run that reached its budget (None for a failed run: its last evaluation
    predates the failure; that one is ``last_eval_return``); ``last5_return`` the mean of its last
    ``HELD_WINDOW`` evaluations (one noisy evaluation moves it less). ``first_nonfinite_*``
    is the first *logged* learner row with ``nonfinite != 0`` (rows come every
    ``log_every_seconds``, so the parameters went non-finite at or before it).
    """
    path = Path(run_dir)
    config_path = path / "config.json"
    if config_path.is_file():
        saved = json.loads(config_path.read_text())
    elif config is not None:
        saved = config_to_dict(config)
    else:
        raise ValueError(f"{path} holds no run (no config.json)")
    evals = (surviving_rows(read_jsonl(path / "eval.jsonl"))
             if (path / "eval.jsonl").is_file() else [])
    learner = read_jsonl(path / "learner.jsonl") if (path / "learner.jsonl").is_file() else []
    summary_path = path / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else None
    failure_path = path / FAILURE_FILE
    failure = json.loads(failure_path.read_text()) if failure_path.is_file() else None
    finished = summary is not None and summary.get("interrupted") is False
    if finished:
        failure = None  # a later successful run of the same directory wins
    elif failure is None and config is None:
        raise ValueError(f"{path} is neither finished (summary.json) nor failed ({FAILURE_FILE})")
    pending = not finished and failure is None

    bad_rows = [r for r in learner if float(r.get("nonfinite", 0.0) or 0.0) != 0.0]
    first_bad = bad_rows[0] if bad_rows else None
    last_row = learner[-1] if learner else {}
    status = ("failed" if failure is not None else "pending" if pending
              else "diverged" if bad_rows else "ok")
    finite_evals = [r for r in evals if _finite_or_none(r.get("eval_return")) is not None]
    best = max(finite_evals, key=lambda r: float(r["eval_return"])) if finite_evals else None
    last = evals[-1] if evals else None
    max_steps = int(saved["max_actor_steps"])
    reached = last is not None and int(last["actor_steps"]) >= max_steps
    ended_in_budget = reached and status not in ("failed", "pending")
    held = evals[-HELD_WINDOW:]
    learner_cfg = saved.get("learner", {})
    precision = str(learner_cfg.get("precision", "fp32"))
    if finished:
        wall = float(summary["wall_time_s"])
        learner_steps = int(summary["learner_steps"])
        actor_steps = int(summary["actor_steps"])
    else:
        wall = float(last_row.get("wall_time_s", 0.0))
        learner_steps = int(last_row.get("learner_steps", 0))
        actor_steps = int(last_row.get("actor_steps", 0))
    return {
        "name": name,
        "run_dir": str(path),
        "precision": precision,
        "lowp_fixes": (("fp32 master weights + " if learner_cfg.get("master_weights") else "")
                       + str(learner_cfg.get("lowp_fixes", ""))) if precision != "fp32"
        else "n/a",
        "quantizer": str(saved["quantizer"]),
        "seed": int(saved["seed"]),
        "max_actor_steps": max_steps,
        "status": status,
        "error": None if failure is None else f"{failure['error_type']}: {failure['error']}",
        "final_return": (_finite_or_none(last["eval_return"]) if ended_in_budget else None),
        "last5_return": (float(np.mean([float(r["eval_return"]) for r in held]))
                         if ended_in_budget and all(_finite_or_none(r.get("eval_return"))
                                                    is not None for r in held) else None),
        "last_eval_return": None if last is None else _finite_or_none(last["eval_return"]),
        "last_eval_actor_steps": None if last is None else int(last["actor_steps"]),
        "best_return": None if best is None else float(best["eval_return"]),
        "best_actor_steps": None if best is None else int(best["actor_steps"]),
        "nonfinite": bool(bad_rows),
        "first_nonfinite_learner_steps": (None if first_bad is None
                                          else int(first_bad["learner_steps"])),
        "first_nonfinite_actor_steps": (None if first_bad is None
                                        else int(first_bad["actor_steps"])),
        "skipped_steps": int(float(last_row.get("skipped_steps", 0) or 0)),
        "loss_scale": _finite_or_none(last_row.get("loss_scale")),
        "actor_loss_scale": _finite_or_none(last_row.get("actor_loss_scale")),
        "alpha_loss_scale": _finite_or_none(last_row.get("alpha_loss_scale")),
        "wall_time_s": wall,
        "learner_steps": learner_steps,
        "actor_steps": actor_steps,
        "energy_kwh": None if summary is None else _finite_or_none(summary.get("energy_kwh")),
        "bytes_pulled": None if summary is None else summary.get("bytes_pulled"),
    }


def _mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return float(np.mean(values)), std


def summarize_variants(rows: Sequence[dict[str, Any]],
                       baseline: str = "fp32") -> dict[str, dict[str, Any]]:
    """Per variant (``row['name']``): seeds, failed/diverged/pending counts, mean ± std (sample
    std, ddof=1) of final and best return and the mean wall time over the seeds that ended
    (pending ones are left out; None when none ended), and whether the final-return mean is within
    5% of ``baseline``'s or above it (``mean >= base - 0.05 |base|``; never when a seed failed or
    diverged, since its final return does not exist or is not a trained policy's; undecided,
    None, while a seed of either is pending)."""
    out: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(r["name"] for r in rows):
        group = [r for r in rows if r["name"] == name]
        ended = [r for r in group if r["status"] != "pending"]
        finals = [r["final_return"] for r in ended if r["final_return"] is not None]
        last5s = [r["last5_return"] for r in ended if r.get("last5_return") is not None]
        bests = [r["best_return"] for r in ended if r["best_return"] is not None]
        final_mean, final_std = _mean_std(finals)
        best_mean, best_std = _mean_std(bests)
        last5_mean, last5_std = _mean_std(last5s)
        out[name] = {
            "precision": group[0]["precision"],
            "lowp_fixes": group[0]["lowp_fixes"],
            "seeds": len(group),
            "failed": sum(r["status"] == "failed" for r in group),
            "diverged": sum(r["status"] == "diverged" for r in group),
            "pending": sum(r["status"] == "pending" for r in group),
            "final_mean": final_mean,
            "final_std": final_std,
            "final_n": len(finals),
            "last5_mean": last5_mean,
            "last5_std": last5_std,
            "best_mean": best_mean,
            "best_std": best_std,
            "wall_time_s_mean": (float(np.mean([r["wall_time_s"] for r in ended]))
                                 if ended else None),
        }
    base = out.get(baseline)
    for entry in out.values():
        healthy = entry["failed"] == 0 and entry["diverged"] == 0
        undecided = base is None or (healthy and (entry["pending"] or base["pending"]))
        entry["last5_rel_to_fp32"] = (
            None if base is None or base["last5_mean"] is None or entry["last5_mean"] is None
            else (entry["last5_mean"] - base["last5_mean"]) / abs(base["last5_mean"]))
        if base is None or base["final_mean"] is None or entry["final_mean"] is None:
            entry["rel_to_fp32"] = None
            entry["within_5pct_of_fp32"] = None if undecided else False
            continue
        rel = (entry["final_mean"] - base["final_mean"]) / abs(base["final_mean"])
        entry["rel_to_fp32"] = rel
        entry["within_5pct_of_fp32"] = None if undecided else bool(healthy and rel >= -WITHIN)
    return out


def state_bytes(config: ml_collections.ConfigDict, precision: str,
                lowp_fixes: str | None = None) -> dict[str, Any]:
    """Bytes of a freshly built SAC learner's ``state()`` for ``config`` in ``precision``.

    Components: ``params`` (policy, critics, target critics, log-temperature), ``optimizer``
    (the three optimizers' moments, Kahan-gradient buffers, loss scales, counters),
    ``kahan_momentum`` (the target critics' compensation) and ``other`` (PRNG key, step
    counters); ``float_bytes`` are the floating leaves alone (those scale with the precision).
    """
    import jax
    import jax.numpy as jnp

    from actorq.agents.registry import builder_for_config
    from actorq.lowp import tree_bytes

    run_config = learner_config(config, precision, lowp_fixes)
    builder = builder_for_config(run_config)
    state = builder.make_learner(iter(()), int(run_config.seed)).state()
    groups = {
        "params": ("policy_params", "critic_params", "target_critic_params", "log_alpha"),
        "optimizer": ("policy_opt_state", "critic_opt_state", "alpha_opt_state"),
        "kahan_momentum": ("target_compensation",),
        "other": ("key", "steps", "skipped_steps"),
    }
    grouped = {k for names in groups.values() for k in names}
    if set(state) != grouped:
        raise ValueError(f"unexpected learner state fields: {sorted(set(state) ^ grouped)}")
    out: dict[str, Any] = {
        "precision": precision,
        "lowp_fixes": "n/a" if precision == "fp32" else str(run_config.learner.lowp_fixes),
    }
    for group, names in groups.items():
        out[group] = tree_bytes([state[n] for n in names])
    out["total"] = tree_bytes(state)
    out["float_bytes"] = tree_bytes([x for x in jax.tree.leaves(state)
                                     if jnp.issubdtype(x.dtype, jnp.floating)])
    return out


def bytes_table(config: ml_collections.ConfigDict) -> list[dict[str, Any]]:
    """:func:`state_bytes` for fp32, then fp16 and bf16 each without and with every fix;
    each row gets ``ratio_to_fp32`` (total bytes)."""
    rows = [state_bytes(config, "fp32")]
    for precision in ("fp16", "bf16"):
        rows += [state_bytes(config, precision, "none"), state_bytes(config, precision, "all")]
    for row in rows:
        row["ratio_to_fp32"] = row["total"] / rows[0]["total"]
    return rows


# ---------------------------------------------------------------------------------------------
# Markdown


def _num(value: float | None, fmt: str = ".1f") -> str:
    return "-" if value is None else format(value, fmt)


def _pm(mean: float | None, std: float | None) -> str:
    return "-" if mean is None else f"{mean:.1f} ± {std:.1f}"


def _nonfinite_cell(row: dict[str, Any]) -> str:
    if not row["nonfinite"]:
        return "no"
    return (f"yes (learner step {row['first_nonfinite_learner_steps']:,}, "
            f"actor step {row['first_nonfinite_actor_steps']:,})")


def _status_cell(row: dict[str, Any]) -> str:
    if row["status"] == "pending":
        if not row["actor_steps"]:
            return "pending (not started)"
        return f"pending (at {row['actor_steps']:,} of {row['max_actor_steps']:,} steps)"
    if row["status"] != "failed":
        return row["status"]
    error = str(row["error"] or "").replace("|", "/").replace("\n", " ")
    return f"failed ({error[:80]})"


def _short_path(run_dir: str) -> str:
    """``main/fp16_fixed_seed0`` for ``<out_dir>/main/fp16_fixed_seed0``."""
    return "/".join(Path(run_dir).parts[-2:])


def _run_table(rows: Sequence[dict[str, Any]], first: str) -> list[str]:
    lines = [
        f"| {first} | seed | status | final return | last {HELD_WINDOW} | best return (at step) | "
        "non-finite params | skipped steps | final loss scale (critic/actor/alpha) | "
        "learner steps | wall s |",
        "|---|---:|---|---:|---:|---:|---|---:|---|---:|---:|",
    ]
    for r in rows:
        best = ("-" if r["best_return"] is None
                else f"{r['best_return']:.1f} ({r['best_actor_steps']:,})")
        final = _num(r["final_return"])
        if r["final_return"] is None and r["last_eval_return"] is not None:
            final = (f"- (last eval {r['last_eval_return']:.1f} at "
                     f"{r['last_eval_actor_steps']:,})")
        scales = "/".join(_num(r[k], "g") for k in
                          ("loss_scale", "actor_loss_scale", "alpha_loss_scale"))
        lines.append(
            f"| {r['name']} | {r['seed']} | {_status_cell(r)} | {final} | "
            f"{_num(r.get('last5_return'))} | {best} | "
            f"{_nonfinite_cell(r)} | {r['skipped_steps']:,} | {scales} | "
            f"{r['learner_steps']:,} | {r['wall_time_s']:.0f} |")
    return lines


def markdown(report: dict[str, Any]) -> str:
    """The ``lowp.md`` report from :func:`build_report`'s dictionary."""
    main_rows, variants = report["main"]["runs"], report["main"]["variants"]
    ablation = report["ablation"] or {"seed": None, "max_actor_steps": 0, "runs": []}
    ablation_budget = (f"ablation budget {ablation['max_actor_steps']:,}" if ablation["runs"]
                       else "no ablation")
    lines = [
        "# Low-precision SAC (Björck et al. 2021): precision, fixes, ablation, memory",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Machine: {report['machine']}",
        "",
        f"Task: {report['agent']} {report['task']}; main budget "
        f"{report['main']['max_actor_steps']:,} actor (env) steps, {ablation_budget}; "
        f"actors run `{report['quantizer']}` "
        "packages (eval_return scores those).",
    ]
    if report.get("note"):
        lines += ["", f"Note: {report['note']}"]
    lines += [
        "",
        "Final return: the evaluation at the end of the budget (mean of "
        f"{report['eval_episodes']} episodes); failed runs have none. Last {HELD_WINDOW}: the mean "
        f"of the last {HELD_WINDOW} evaluations. Non-finite params: the "
        "first logged learner row (every log_every_seconds) reporting NaN/inf parameters. "
        "Skipped steps: optimizer steps skipped on overflow by compound loss scaling, all three "
        "optimizers, cumulative.",
        "",
        "## Main table",
        "",
        *_run_table(main_rows, "variant"),
        "",
        "Per variant (mean ± sample std over seeds; `within 5%`: the final-return mean is at most "
        "5% below fp32's, or above it; `no` whenever a seed failed or diverged; `-` while a seed "
        "is pending):",
        "",
        "| variant | precision | fixes | seeds | failed | diverged | final return | "
        f"last {HELD_WINDOW} | best return | vs fp32 | last {HELD_WINDOW} vs fp32 | "
        "within 5% of fp32 | mean wall s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for name, v in variants.items():
        within = {True: "yes", False: "no", None: "-"}[v["within_5pct_of_fp32"]]
        rel = "-" if v["rel_to_fp32"] is None else f"{100 * v['rel_to_fp32']:+.1f}%"
        rel5 = ("-" if v.get("last5_rel_to_fp32") is None
                else f"{100 * v['last5_rel_to_fp32']:+.1f}%")
        final = _pm(v["final_mean"], v["final_std"])
        if v["final_n"] != v["seeds"] and v["final_mean"] is not None:
            final += f" (n={v['final_n']})"
        seeds = f"{v['seeds']} ({v['pending']} pending)" if v["pending"] else str(v["seeds"])
        lines.append(
            f"| {name} | {v['precision']} | {v['lowp_fixes']} | {seeds} | {v['failed']} | "
            f"{v['diverged']} | {final} | {_pm(v.get('last5_mean'), v.get('last5_std'))} | "
            f"{_pm(v['best_mean'], v['best_std'])} | {rel} | {rel5} | {within} | "
            f"{_num(v['wall_time_s_mean'], '.0f')} |")

    lines += [] if not ablation["runs"] else [
        "",
        f"## Ablation: fp16 with all fixes but one (seed {ablation['seed']}, "
        f"{ablation['max_actor_steps']:,} actor steps)",
        "",
        *_run_table(ablation["runs"], "setting"),
        "",
        "| setting | fixes on | status | final return | vs fp16_all |",
        "|---|---|---|---:|---:|",
    ]
    reference = next((r for r in ablation["runs"] if r["name"] == "fp16_all"), None)
    for r in ablation["runs"]:
        rel = "-"
        if (reference is not None and reference["final_return"] and r["final_return"] is not None):
            rel = f"{100 * (r['final_return'] / reference['final_return'] - 1):+.1f}%"
        lines.append(f"| {r['name']} | {r['lowp_fixes']} | {r['status']} | "
                     f"{_num(r['final_return'])} | {rel} |")

    lines += [
        "",
        "## Learner state bytes (parameters + optimizer state)",
        "",
        "A freshly built SACLearner's state(): params = policy, critics, target critics, "
        "log-temperature; optimizer = the three optimizers' moments, Kahan-gradient buffers, "
        "loss scales and counters; Kahan-momentum = the target critics' compensation; other = "
        "PRNG key and step counters.",
        "",
        "| precision | fixes | params | optimizer | Kahan-momentum | other | total | "
        "ratio to fp32 |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for b in report["bytes"]:
        lines.append(
            f"| {b['precision']} | {b['lowp_fixes']} | {b['params']:,} | {b['optimizer']:,} | "
            f"{b['kahan_momentum']:,} | {b['other']:,} | {b['total']:,} | "
            f"{b['ratio_to_fp32']:.3f} |")

    comparison = report.get("actorq")
    if comparison:
        lines += [
            "",
            "## int8 actors + fp16 learner vs fp32/fp32",
            "",
            "Fully low-precision ActorQ (int8 actor policies, fp16 learner with every fix) "
            f"against fp32 actors with an fp32 learner; seed {comparison['seed']}, "
            f"{comparison['max_actor_steps']:,} actor steps. Wall time is on a shared machine "
            "(other jobs ran beside it): compare it loosely.",
            "",
            "| actors | learner | run | status | final return | best return (at step) | "
            "learner state bytes | bytes pulled by the actor | learner steps | wall s | "
            "energy Wh |",
            "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r, nbytes in zip(comparison["runs"], comparison["state_bytes"]):
            best = ("-" if r["best_return"] is None
                    else f"{r['best_return']:.1f} ({r['best_actor_steps']:,})")
            fixes = "" if r["precision"] == "fp32" else f" ({r['lowp_fixes']} fixes)"
            energy = "-" if r["energy_kwh"] is None else f"{1000 * r['energy_kwh']:.2f}"
            pulled = "-" if r["bytes_pulled"] is None else f"{int(r['bytes_pulled']):,}"
            lines.append(
                f"| {r['quantizer']} | {r['precision']}{fixes} | {_short_path(r['run_dir'])} | "
                f"{_status_cell(r)} | "
                f"{_num(r['final_return'])} | {best} | {nbytes:,} | {pulled} | "
                f"{r['learner_steps']:,} | {r['wall_time_s']:.0f} | {energy} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The study


def run_main_table(config: ml_collections.ConfigDict, variants: Sequence[Variant],
                   seeds: Sequence[int], out_dir: Path, reuse: bool,
                   keep: Path | None = None, report_only: bool = False) -> list[dict[str, Any]]:
    """Every (variant, seed) at the config's budget; their rows (``report_only``: as they
    stand, unfinished ones pending)."""
    rows = []
    for variant in variants:
        for seed in seeds:
            run_config = learner_config(config, variant.precision, variant.lowp_fixes, seed,
                                        master_weights=variant.master_weights)
            path = run_recording_failures(
                run_config, out_dir / "main" / f"{variant.name}_seed{seed}", reuse, keep,
                report_only)
            rows.append(summarize_run(path, variant.name, run_config if report_only else None))
    return rows


def run_ablation(config: ml_collections.ConfigDict, seed: int, steps: int, out_dir: Path,
                 reuse: bool, keep: Path | None = None,
                 report_only: bool = False) -> list[dict[str, Any]]:
    """fp16 with each fix removed in turn, plus all and none, at ``steps``; their rows."""
    rows = []
    for name, fixes in ablation_settings():
        run_config = learner_config(config, "fp16", fixes, seed, steps)
        path = run_recording_failures(run_config, out_dir / "ablation" / name, reuse, keep,
                                      report_only)
        rows.append(summarize_run(path, name, run_config if report_only else None))
    return rows


def run_actorq_comparison(config: ml_collections.ConfigDict, seed: int, out_dir: Path,
                          reuse: bool, main_dirs: dict[str, ml_collections.ConfigDict],
                          keep: Path | None = None,
                          report_only: bool = False) -> list[dict[str, Any]]:
    """int8 actors + fp16 (all fixes) learner, then fp32 actors + fp32 learner; a main-table run
    with an identical config (``main_dirs``: directory -> config) is reused."""
    rows = []
    for quantizer, precision, fixes in (("int8", "fp16", "all"), ("fp32", "fp32", None)):
        run_config = learner_config(config, precision, fixes, seed, quantizer=quantizer)
        name = f"{quantizer}_actors_{precision}_learner"
        path = next((Path(d) for d, c in main_dirs.items() if _same_config(c, run_config)),
                    out_dir / "actorq" / f"{name}_seed{seed}")
        path = run_recording_failures(run_config, path, reuse, keep, report_only)
        rows.append(summarize_run(path, name, run_config if report_only else None))
    return rows


def build_report(config: ml_collections.ConfigDict, variants: Sequence[Variant],
                 seeds: Sequence[int], ablation_seed: int, ablation_steps: int, out_dir: Path,
                 reuse: bool, actorq_comparison: bool, command: str,
                 note: str = "", keep: Path | None = None,
                 report_only: bool = False) -> dict[str, Any]:
    """Runs (or reuses) everything and returns the report dictionary (``lowp.json``); ``keep``:
    where each run's records are copied as it ends (:func:`run_recording_failures`);
    ``report_only``: starts no run and reports the unfinished ones as pending."""
    main_rows = run_main_table(config, variants, seeds, out_dir, reuse, keep, report_only)
    ablation_rows = (run_ablation(config, ablation_seed, ablation_steps, out_dir, reuse, keep,
                                  report_only)
                     if ablation_steps else [])
    nbytes = bytes_table(config)
    report: dict[str, Any] = {
        "command": command,
        "machine": machine_name(),
        "note": note,
        "agent": str(config.agent),
        "task": str(config.task),
        "quantizer": str(config.quantizer),
        "eval_episodes": int(config.eval_episodes),
        "main": {
            "max_actor_steps": int(config.max_actor_steps),
            "seeds": list(seeds),
            "runs": main_rows,
            "variants": summarize_variants(main_rows),
        },
        "ablation": ({"seed": ablation_seed, "max_actor_steps": ablation_steps,
                      "runs": ablation_rows} if ablation_steps else None),
        "bytes": nbytes,
    }
    if actorq_comparison:
        main_dirs = {
            str(out_dir / "main" / f"{v.name}_seed{s}"):
                learner_config(config, v.precision, v.lowp_fixes, s,
                               master_weights=v.master_weights)
            for v in variants for s in seeds
        }
        rows = run_actorq_comparison(config, seeds[0], out_dir, reuse, main_dirs, keep,
                                     report_only)
        by_precision = {(b["precision"], b["lowp_fixes"]): b["total"] for b in nbytes}
        config_fixes = str(config.learner.lowp_fixes)
        report["actorq"] = {
            "seed": seeds[0],
            "max_actor_steps": int(config.max_actor_steps),
            "runs": rows,
            "state_bytes": [by_precision.get((r["precision"], r["lowp_fixes"]),
                                             by_precision.get((r["precision"], config_fixes)))
                            for r in rows],
        }
    return report


def write_report(report: dict[str, Any], out_dir: str | Path) -> Path:
    """Writes ``lowp.json`` and ``lowp.md`` into ``out_dir``; returns the markdown's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lowp.json").write_text(
        json.dumps(json_safe(report), indent=2, allow_nan=False) + "\n")
    md = out / "lowp.md"
    md.write_text(markdown(report))
    return md


def _without_note(args: Sequence[str]) -> list[str]:
    """The command-line arguments minus ``--note`` (the report prints the note on its own)."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("--note", "-note"):
            skip = True
        elif not arg.startswith(("--note=", "-note=")):
            out.append(arg)
    return out


def main(argv: list[str]) -> None:
    """Runs the study described by the flags and prints the report."""
    del argv
    config = _CONFIG.value
    with bad_input():
        variants = parse_variants(_VARIANTS.value)
        seeds = parse_ints(_SEEDS.value, "seeds")
        steps = _ABLATION_STEPS.value or int(config.max_actor_steps) // 2
        if not _ABLATION.value:
            steps = 0
        elif steps < 1:
            raise ValueError("--ablation_steps must be >= 1")
        if _ABLATION_SEED.value < 0:
            raise ValueError(f"--ablation_seed must be >= 0, got {_ABLATION_SEED.value}")
        check_grid(config, [str(config.quantizer)], seeds, _OUT_DIR.value)
        if _KEEP_RECORDS.value:
            check_writable_dir(_KEEP_RECORDS.value, "--keep_records")
    command = "python -m experiments.lowp_study " + " ".join(
        shlex.quote(a) for a in _without_note(sys.argv[1:]))
    out_dir = Path(_OUT_DIR.value)
    keep = Path(_KEEP_RECORDS.value) if _KEEP_RECORDS.value else None
    report = build_report(config, variants, seeds, _ABLATION_SEED.value, steps, out_dir,
                          _REUSE.value, _ACTORQ.value, command, _NOTE.value, keep,
                          _REPORT_ONLY.value)
    print(write_report(report, out_dir).read_text())
    if keep is not None:
        print(f"run records: {keep}")


if __name__ == "__main__":
    from ml_collections import config_flags

    _CONFIG = config_flags.DEFINE_config_file(
        "config", None, "SAC experiment config (e.g. configs/sac_actorq.py:cartpole_balance_small)")
    _SEEDS = flags.DEFINE_list("seeds", ["0", "1"], "seeds of the main table")
    _ABLATION_SEED = flags.DEFINE_integer("ablation_seed", 0, "the ablation's seed")
    _ABLATION_STEPS = flags.DEFINE_integer(
        "ablation_steps", 0, "the ablation's actor-step budget (0: half of max_actor_steps)")
    _ABLATION = flags.DEFINE_bool("ablation", True, "run the one-fix-removed ablation")
    _OUT_DIR = flags.DEFINE_string("out_dir", None, "where runs and the report go",
                                   required=True)
    _REUSE = flags.DEFINE_bool("reuse", True, "reuse finished (or failed) runs in out_dir and "
                               "resume interrupted ones")
    _VARIANTS = flags.DEFINE_string(
        "variants", DEFAULT_VARIANTS,
        "main-table learners: fp32, <fp16|bf16>_naive (no fixes), <fp16|bf16>_fixed (all)")
    _ACTORQ = flags.DEFINE_bool(
        "actorq_comparison", True,
        "also run int8 actors + fp16 learner vs fp32 actors + fp32 learner (first seed)")
    _NOTE = flags.DEFINE_string("note", "", "a line for the report's header (e.g. a cut budget)")
    _REPORT_ONLY = flags.DEFINE_bool(
        "report_only", False, "start no run: report the runs in --out_dir as they stand, "
        "listing the unfinished ones (and those not started) as pending")
    _KEEP_RECORDS = flags.DEFINE_string(
        "keep_records", "", "also copy each run's config, logs and summary here (a docs folder): "
        "--out_dir=<it> later rebuilds the report")
    flags.mark_flag_as_required("config")
    run_absl(main)
