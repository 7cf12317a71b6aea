"""Quantization-aware training sweep over bit widths (QuaRL Fig. 10).

For every bit width ``b`` the learner trains through ``b``-bit fake quantization
(``learner.qat_bits=b``, after a delay) and the actors run the ``int<b>`` package, so training and
acting see the same precision; an fp32 run (no QAT, fp32 actors) is the baseline:

    python -m experiments.qat_sweep --config=configs/dqn_actorq.py:cartpole_small \\
        --bits=2,3,4,5,6,7,8 --seeds=0 --out_dir=runs/qat_cartpole

With ``--config.qat_actors=fp32`` the actors run the learner's fp32 policy until the QAT delay
and ``int<b>`` after it, as in QuaRL's QAT (the policy is fp32 until fake quantization switches
on); the default (``quantized``) gives them ``int<b>`` from the start.

Runs go to ``<out_dir>/fp32_seed<s>`` and ``<out_dir>/int<b>_qat_seed<s>``; finished ones are
reused (``--reuse``, the default) so re-running the command just rebuilds ``qat.md``,
``qat.json`` and ``qat.png``. The report covers every finished run in ``out_dir``, so a second
command can add seeds for some bit widths (``--bits=4,5,6 --seeds=1``). ``--keep_records=<dir>``
copies each run's config, evaluations, learner log and summary there as it finishes (kilobytes);
those copies are finished runs, so ``--out_dir=<dir>`` rebuilds the report from them on any machine.

QAT delay: ``learner.qat_delay_steps`` counts learner steps, so ``--qat_delay_fraction`` (of
the run's learner steps; default one half, the delay QuaRL found best) is converted with the
learner's schedule:
- replay agents (DQN, DDPG, D4PG, SAC): once replay holds ``replay.min_size`` items the learner
  takes ``samples_per_insert / batch_size`` SGD steps per actor step, so a run makes about
  ``(max_actor_steps - min_size) * samples_per_insert / batch_size`` SGD steps;
- queue agents (PPO, A2C): one learner step (an update, all its epochs) per batch of
  ``unroll_length * unrolls_per_batch`` env steps.
The delay is ``round(fraction * that)``. Distributed launchers pace the learner by the same rate
limiter, but the error buffer lets replay runs drift: there it is an estimate
(``--qat_delay_steps`` sets the step count directly).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ml_collections
import numpy as np
from absl import flags
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from actorq.analysis.ptq import relative_error
from actorq.analysis.report import json_safe
from actorq.analysis.runs import copy_run_records
from actorq.analysis.speedup import final_returns, load_run, smoothed_mean_curve
from actorq.command_line import bad_input, check_writable_dir, parse_ints, run_absl
from actorq.quantization.numerics import check_bits
from launchpad_programs.launch import check_config
from launchpad_programs.study_runs import records_kept_if_stopped, run_or_load

BASELINE = "fp32"
# QuaRL (App. A): quantization switched on at half of training gave the best rewards.
DEFAULT_DELAY_FRACTION = 0.5


def expected_learner_steps(config: ml_collections.ConfigDict) -> int:
    """Learner steps a single-process run of ``config`` takes (see the module docstring)."""
    if config.replay.rate_limiter == "queue":
        steps_per_update = int(config.learner.unroll_length) * int(config.learner.unrolls_per_batch)
        return int(config.max_actor_steps) // steps_per_update
    filling = max(0, int(config.max_actor_steps) - int(config.replay.min_size))
    return int(filling * float(config.replay.samples_per_insert) / int(config.learner.batch_size))


def qat_delay_steps(config: ml_collections.ConfigDict, fraction: float) -> int:
    """``round(fraction * expected_learner_steps(config))`` learner SGD steps of fp32 first."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"--qat_delay_fraction must be in [0, 1], got {fraction}")
    return round(fraction * expected_learner_steps(config))


def parse_bits(bits: str | Sequence[int | str]) -> list[int]:
    """Validated bit widths (2..8, no duplicates), in the given order."""
    values = parse_ints(bits, "bits")
    for b in values:
        try:
            check_bits(b)
        except ValueError as e:
            raise ValueError(f"--bits: {e}") from None
    return values


def plan_sweep(
    config: ml_collections.ConfigDict,
    bits: str | Sequence[int],
    seeds: str | Sequence[int],
    out_dir: str | Path,
    delay_fraction: float = DEFAULT_DELAY_FRACTION,
    delay_steps: int | None = None,
) -> list[tuple[ml_collections.ConfigDict, Path]]:
    """The sweep's runs, ``(config, run dir)``: per seed the fp32 baseline, then one QAT run per
    bit width. Every config is checked (``check_config``) and ``out_dir`` must be writable, so
    bad input fails here, before anything runs (ValueError/OSError naming it).

    ``delay_steps`` (learner SGD steps) overrides ``delay_fraction`` when given.
    """
    bit_list = parse_bits(bits)
    seed_list = parse_ints(seeds, "seeds")
    if "qat_bits" not in config.learner or "qat_delay_steps" not in config.learner:
        raise ValueError(f"the {config.agent} learner config has no qat_bits/qat_delay_steps")
    if delay_steps is not None and delay_steps < 0:
        raise ValueError(f"--qat_delay_steps must be >= 0, got {delay_steps}")
    if not (math.isfinite(delay_fraction) and 0 <= delay_fraction <= 1):
        raise ValueError(f"--qat_delay_fraction must be in [0, 1], got {delay_fraction}")
    delay = qat_delay_steps(config, delay_fraction) if delay_steps is None else delay_steps
    out = check_writable_dir(out_dir, "--out_dir")
    plan = []
    for seed in seed_list:
        base = config.copy_and_resolve_references()
        base.seed = seed
        base.quantizer = BASELINE
        base.learner.qat_bits = None
        base.learner.qat_delay_steps = 0
        # Without QAT qat_actors does nothing: one baseline serves sweeps of either protocol.
        base.qat_actors = "quantized"
        plan.append((base, out / f"{BASELINE}_seed{seed}"))
        for b in bit_list:
            run = config.copy_and_resolve_references()
            run.seed = seed
            # Round-to-nearest: the package runs exactly the numerics the policy trained through.
            run.quantizer = f"rtn_int{b}"
            run.learner.qat_bits = b
            run.learner.qat_delay_steps = delay
            plan.append((run, out / f"int{b}_qat_seed{seed}"))
    for run_config, _ in plan:
        check_config(run_config)
    return plan


def run_sweep(
    config: ml_collections.ConfigDict,
    bits: str | Sequence[int],
    seeds: str | Sequence[int],
    out_dir: str | Path,
    delay_fraction: float = DEFAULT_DELAY_FRACTION,
    delay_steps: int | None = None,
    reuse: bool = True,
    keep: str | Path | None = None,
) -> list[Path]:
    """Runs (or reuses) every run of :func:`plan_sweep`; returns their directories.

    With ``keep``, each run's records are copied to ``keep/<run name>`` as soon as it ends, so a
    sweep cut short (or a machine lost) keeps every run that finished, and the records so far of
    the run it stopped in."""
    plan = plan_sweep(config, bits, seeds, out_dir, delay_fraction, delay_steps)
    dirs = []
    for run_config, path in plan:
        with records_kept_if_stopped(path, keep or None):
            dirs.append(run_or_load(run_config, path, reuse))
        if keep:
            copy_run_records(dirs[-1:], keep)
    return dirs


def finished_sweep_runs(out_dir: str | Path) -> list[Path]:
    """The finished runs (``summary.json`` written) a sweep left in ``out_dir``, by name: the
    report covers every seed and bit width run there, not only the last command's."""
    out = Path(out_dir)
    names = [*out.glob(f"{BASELINE}_seed*"), *out.glob("int*_qat_seed*")]
    return sorted(p.resolve() for p in names if (p / "summary.json").is_file())


def _run_bits(config: dict[str, Any]) -> int | None:
    bits = config.get("learner", {}).get("qat_bits")
    return None if bits is None else int(bits)


def _run_actors(run: Any) -> str:
    """What a run's actors ran: the quantizer, or ``fp32, then <quantizer>`` for a QAT run with
    ``qat_actors=fp32`` (fp32 packages until the QAT delay)."""
    config = dict(run.config)
    if config.get("qat_actors", "quantized") == "fp32" and _run_bits(config) is not None:
        return f"fp32, then {run.quantizer}"
    return run.quantizer


def seed_matched_baseline(fp32_finals: dict[int, float], seeds: Sequence[int]
                          ) -> tuple[list[int], float | None]:
    """The fp32 seeds a row is judged against (its own, when each has an fp32 run; else every
    fp32 seed) and fp32's mean final return over them (None without fp32 runs)."""
    seeds = list(seeds)
    matched = seeds if all(s in fp32_finals for s in seeds) else sorted(fp32_finals)
    base = float(np.mean([fp32_finals[s] for s in matched])) if matched else None
    return matched, base


def qat_rows(run_dirs: Sequence[str | Path]) -> list[dict[str, Any]]:
    """One row per precision (fp32 first, then bit widths descending) with final returns.

    Final return: mean of the last 10% of a run's evaluations, then mean ± std (ddof=0) over
    seeds; relative error ``(fp32 - quant) / |fp32|`` of those means, with fp32 averaged over
    the row's own seeds when each of them has an fp32 run (``baseline_seeds``; else over every
    fp32 seed), so that a width run on fewer seeds is not judged against other seeds' fp32.
    Runs of one bit width whose actors differ (``qat_actors``) are not averaged together:
    ValueError.
    """
    groups: dict[str, list[Any]] = {}
    for run_dir in run_dirs:
        run = load_run(run_dir)
        bits = _run_bits(dict(run.config))
        if bits is None and run.quantizer != BASELINE:
            raise ValueError(f"{run.path} is neither fp32 nor a QAT run (learner.qat_bits unset)")
        key = BASELINE if bits is None else f"int{bits}"
        groups.setdefault(key, []).append(run)
    if not groups:
        raise ValueError("qat_rows needs at least one run")
    order = sorted(groups, key=lambda k: (k != BASELINE, -int(k[3:]) if k != BASELINE else 0))
    fp32_runs = groups.get(BASELINE, [])
    fp32_finals = dict(zip((r.seed for r in fp32_runs), final_returns(fp32_runs).values)
                       ) if fp32_runs else {}
    rows = []
    for key in order:
        runs = sorted(groups[key], key=lambda r: r.seed)
        actors = sorted({_run_actors(r) for r in runs})
        if len(actors) > 1:
            raise ValueError(f"the {key} runs' actors differ ({'; '.join(actors)}): keep sweeps "
                             "with different qat_actors in different --out_dir")
        final = final_returns(runs)
        seeds = [r.seed for r in runs]
        matched, base = seed_matched_baseline(fp32_finals, seeds)
        delays = sorted({int(r.config.get("learner", {}).get("qat_delay_steps", 0)) for r in runs})
        rows.append({
            "precision": key,
            "bits": None if key == BASELINE else int(key[3:]),
            "actor_quantizer": actors[0],
            "seeds": seeds,
            "baseline_seeds": matched,
            "baseline_return": base,
            "qat_delay_steps": None if key == BASELINE else delays,
            "final_return_mean": final.mean,
            "final_return_std": final.std,
            "final_returns": list(final.values),
            "relative_error": None if base is None else relative_error(base, final.mean),
            "runs": [str(r.path) for r in runs],
        })
    return rows


def qat_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The rows of :func:`qat_rows` as a Markdown table."""
    lines = [
        "| precision | actors | QAT delay (SGD steps) | seeds | final return | "
        "fp32 on the same seeds | rel. error vs fp32 |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        err, base = r["relative_error"], r["baseline_return"]
        if base is None:
            baseline = "—"
        elif r["baseline_seeds"] == r["seeds"]:
            baseline = f"{base:.2f}"
        else:  # some of the row's seeds have no fp32 run: all of fp32's seeds, named
            baseline = f"{base:.2f} (seeds {', '.join(map(str, r['baseline_seeds']))})"
        delay = "—" if r["qat_delay_steps"] is None else ", ".join(map(str, r["qat_delay_steps"]))
        lines.append(
            f"| {r['precision']}{'' if r['bits'] is None else ' QAT'} | {r['actor_quantizer']} | "
            f"{delay} | {', '.join(map(str, r['seeds']))} | "
            f"{r['final_return_mean']:.2f} ± {r['final_return_std']:.2f} | {baseline} | "
            f"{'—' if err is None else f'{100 * err:.2f}%'} |"
        )
    return "\n".join(lines) + "\n"


def plot_qat(rows: Sequence[dict[str, Any]], path: str | Path, title: str) -> Path:
    """Left: final return vs bit width (error bars: std over seeds; fp32 as a dashed line and
    band). Right: smoothed eval curves per precision (mean over seeds)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig = Figure(figsize=(11.0, 4.2))
    FigureCanvasAgg(fig)
    ax, curves_ax = fig.subplots(1, 2)
    quant = sorted((r for r in rows if r["bits"] is not None), key=lambda r: r["bits"])
    if quant:
        ax.errorbar([r["bits"] for r in quant], [r["final_return_mean"] for r in quant],
                    yerr=[r["final_return_std"] for r in quant], marker="o", capsize=3,
                    label="QAT, fp32 actors until the delay"
                    if quant[0]["actor_quantizer"].startswith("fp32, then")
                    else "QAT + int<b> actors")
        ax.set_xticks([r["bits"] for r in quant])
    for r in rows:
        if r["bits"] is None:
            mean, std = r["final_return_mean"], r["final_return_std"]
            ax.axhline(mean, color="black", linestyle="--", linewidth=1.0, label="fp32")
            ax.axhspan(mean - std, mean + std, color="black", alpha=0.1, lw=0)
    ax.set_xlabel("bits (weights and activations)")
    ax.set_ylabel("final eval return")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    for r in rows:
        runs = [load_run(p) for p in r["runs"]]
        curve = smoothed_mean_curve(runs, axis="actor_steps", window=3)
        curves_ax.plot(curve.x, curve.mean, label=r["precision"],
                       color="black" if r["bits"] is None else None)
    curves_ax.set_xlabel("actor steps")
    curves_ax.set_ylabel("eval return (smoothed, window=3)")
    curves_ax.grid(alpha=0.3)
    curves_ax.legend(fontsize="small")
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    return out


def write_qat_report(run_dirs: Sequence[str | Path], out_dir: str | Path) -> Path:
    """Writes ``qat.md``, ``qat.json`` and ``qat.png`` to ``out_dir``; returns the .md path."""
    rows = qat_rows(run_dirs)
    first = load_run(run_dirs[0])
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    png = plot_qat(rows, out / "qat.png",
                   f"QAT sweep: {first.agent.upper()} {first.task}")
    text = [
        f"# Quantization-aware training sweep: {first.agent.upper()} {first.task}",
        "",
        "Each bit width b trains with b-bit fake quantization of weights and activations "
        "(after the listed delay of fp32 SGD steps) and acts with the listed actors (int<b> "
        "from the start, or fp32 until the delay with `qat_actors=fp32`, QuaRL's protocol); "
        "fp32 trains and acts in fp32. Final return: mean of the last 10% of a run's "
        "evaluations, then mean ± std (ddof=0) over seeds. Relative error = "
        "(fp32 − quantized) / |fp32|, with fp32 over the row's own seeds.",
        "",
        qat_markdown(rows),
        f"![qat]({png.name})",
        "",
    ]
    md = out / "qat.md"
    md.write_text("\n".join(text))
    payload = {"agent": first.agent, "task": first.task, "rows": rows, "plot": png.name}
    (out / "qat.json").write_text(json.dumps(json_safe(payload), indent=2) + "\n")
    return md


def _define_flags() -> None:
    from ml_collections import config_flags

    config_flags.DEFINE_config_file(
        "config", "configs/dqn_actorq.py:cartpole_small", "Experiment config to sweep."
    )
    flags.DEFINE_list("bits", ["2", "3", "4", "5", "6", "7", "8"], "QAT/actor bit widths.")
    flags.DEFINE_list("seeds", ["0"], "Seeds.")
    flags.DEFINE_string("out_dir", "runs/qat_sweep", "Where runs and the report go.")
    flags.DEFINE_float("qat_delay_fraction", DEFAULT_DELAY_FRACTION,
                       "QAT starts after this fraction of the run's expected learner SGD steps.")
    flags.DEFINE_integer("qat_delay_steps", -1, "QAT delay in learner SGD steps (overrides "
                         "--qat_delay_fraction when >= 0).")
    flags.DEFINE_bool("reuse", True, "Reuse finished runs in --out_dir, resume unfinished ones.")
    flags.DEFINE_string("keep_records", "", "Also copy each run's config, evaluations, learner log "
                        "and summary here as it finishes (a docs folder): --out_dir=<it> later "
                        "rebuilds the report.")


def main(argv: list[str]) -> None:
    """Runs (or reuses) the sweep, writes the report and prints its table."""
    del argv
    f = flags.FLAGS
    delay = f.qat_delay_steps if f.qat_delay_steps >= 0 else None
    with bad_input():
        plan_sweep(f.config, f.bits, f.seeds, f.out_dir, f.qat_delay_fraction, delay)
        if f.keep_records:
            check_writable_dir(f.keep_records, "--keep_records")
    dirs = run_sweep(f.config, f.bits, f.seeds, f.out_dir, f.qat_delay_fraction, delay, f.reuse,
                     f.keep_records or None)
    everything = sorted({Path(d).resolve() for d in [*dirs, *finished_sweep_runs(f.out_dir)]})
    print(write_qat_report(everything, f.out_dir).read_text())
    if f.keep_records:
        # Runs of earlier commands in --out_dir too, so the kept records rebuild this report.
        copy_run_records(everything, f.keep_records)
        print(f"run records: {f.keep_records}")


if __name__ == "__main__":
    _define_flags()
    run_absl(main)
