"""Post-training quantization (PTQ) study of a trained policy (QuaRL Table 2 and Fig. 3).

The fp32 policy of a run is quantized with every requested quantizer and evaluated, noise-free,
on the *same* episodes: episode ``i`` of every precision runs in a fresh environment seeded with
``episode_seeds(seed, k)[i]``, so all precisions start from identical states and differences in
return come from the policy alone. Definitions used in the report:

* **Return**: mean and population std (ddof=0) of the ``k`` episode returns.
* **Relative error** vs fp32: ``(R_fp32 - R_q) / |R_fp32|`` on the mean returns (positive = the
  quantized policy earns less; the paper's "Error"); undefined (None) when ``R_fp32 == 0``.
* **Action divergence**, on one shared set of observations: every observation visited by the fp32
  rollouts (evenly subsampled down to ``max_observations``), fed to every precision.

  - Discrete policies (DQN; outputs are Q-values): ``KL(softmax(Q_fp32 / T) || softmax(Q_q / T))``
    in nats, ``T`` = ``temperature`` (1 by default), mean and max over observations; and the
    action agreement rate: the fraction of observations where both greedy (argmax) actions match.
  - Deterministic continuous policies (D4PG; outputs are actions in [-1, 1]): mean over
    observations of the L2 distance between the two action vectors, and the max absolute
    difference over every observation and action dimension.

fp32 itself runs through the same package and runtime path as the others (the ``fp32`` quantizer
is a float32 copy), so its row is exactly 0 error, 0 KL and full agreement by construction.

Quantizers that calibrate on observations (GPTQ) get :func:`calibration_observations`: fp32
rollouts of episodes that are *not* evaluated, so they are not fitted to the states they are
scored on.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from actorq.analysis.plots import safe_name
from actorq.analysis.report import json_safe
from actorq.analysis.trained_policy import TrainedPolicy
from actorq.envs import make_environment
from actorq.quantization import make_quantizer
from actorq.runtime.environment_loop import evaluate
from actorq.runtime.policy_runtime import make_policy_runtime

BASELINE = "fp32"
DEFAULT_QUANTIZERS: tuple[str, ...] = (
    "fp32", "fp16", "bf16", "int8", "int7", "int6", "int5", "int4", "int3", "int2",
)
DEFAULT_TEMPERATURE = 1.0
# Quantizers that calibrate (GPTQ) get as many observations as the learner hands them (its
# fixed batch of 256 replay observations, the one the drift monitor also uses), taken from
# fp32 rollouts of episodes that are not evaluated.
CALIBRATION_EPISODES = 2
CALIBRATION_SIZE = 256
DEFAULT_COMPARE = "int8"


def parse_quantizers(specs: str | Sequence[str], include_baseline: bool = True) -> list[str]:
    """Validates a quantizer list (``"fp32,int8"`` or a sequence).

    With ``include_baseline`` fp32, the reference every other precision is compared with, is
    put first (added when missing); otherwise the order is kept. Raises ValueError for an empty
    list, a duplicate or an unknown spec (listing the valid ones).
    """
    items = specs.split(",") if isinstance(specs, str) else list(specs)
    names = [str(s).strip() for s in items if str(s).strip()]
    if not names:
        raise ValueError("the quantizer list is empty; give e.g. fp32,fp16,int8")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate quantizers in the list: {', '.join(duplicates)}")
    for name in names:
        make_quantizer(name)  # raises ValueError naming the valid specs
    if not include_baseline:
        return names
    return [BASELINE, *[n for n in names if n != BASELINE]]


def episode_seeds(seed: int, episodes: int) -> list[int]:
    """The environment seed of each evaluation episode, shared by every precision."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    # SeedSequence spreads nearby study seeds apart (seed 0 and 1 share no episode seeds).
    return [int(s) for s in np.random.SeedSequence(int(seed)).generate_state(episodes)]


def log_softmax(logits: np.ndarray, temperature: float = DEFAULT_TEMPERATURE) -> np.ndarray:
    """Row-wise ``log(softmax(logits / temperature))`` in float64 (max-shifted: stable)."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    x = np.asarray(logits, np.float64) / temperature
    x = x - np.max(x, axis=-1, keepdims=True)
    return x - np.log(np.sum(np.exp(x), axis=-1, keepdims=True))


def kl_divergence(
    reference_logits: np.ndarray,
    logits: np.ndarray,
    temperature: float = DEFAULT_TEMPERATURE,
) -> np.ndarray:
    """Per-row ``KL(softmax(reference / T) || softmax(logits / T))`` in nats.

    Identical inputs give exactly 0: the log-probabilities are then bitwise equal, so every term
    of the sum is ``p * 0``. Tiny negative rounding results are clipped to 0.
    """
    ref = np.asarray(reference_logits)
    other = np.asarray(logits)
    if ref.shape != other.shape:
        raise ValueError(f"shape mismatch: {ref.shape} vs {other.shape}")
    log_p = log_softmax(ref, temperature)
    log_q = log_softmax(other, temperature)
    kl = np.sum(np.exp(log_p) * (log_p - log_q), axis=-1)
    return np.maximum(kl, 0.0)


def action_agreement(reference_actions: np.ndarray, actions: np.ndarray) -> float:
    """Fraction of observations where two discrete policies pick the same action."""
    ref, other = np.asarray(reference_actions), np.asarray(actions)
    if ref.shape != other.shape or ref.size == 0:
        raise ValueError(f"need equal, non-empty action arrays, got {ref.shape}, {other.shape}")
    return float(np.mean(ref == other))


def action_gap_errors(reference_q: np.ndarray, q_values: np.ndarray) -> tuple[np.ndarray,
                                                                                np.ndarray]:
    """Per row: fp32's action gap (its best minus its second-best Q-value) and how far the
    quantized Q-values move that same difference. The greedy action can only flip where the
    gap error reaches the gap, so the two medians explain a precision's action agreement."""
    ref, other = np.asarray(reference_q, np.float64), np.asarray(q_values, np.float64)
    if ref.shape != other.shape or ref.ndim != 2 or ref.shape[1] < 2:
        raise ValueError(f"need equal [n, >=2] Q-value arrays, got {ref.shape}, {other.shape}")
    order = np.argsort(-ref, axis=1)
    rows = np.arange(len(ref))
    best, second = order[:, 0], order[:, 1]
    gap = ref[rows, best] - ref[rows, second]
    gap_q = other[rows, best] - other[rows, second]
    return gap, np.abs(gap_q - gap)


def agreement_by_gap_quartile(gaps: np.ndarray, reference_actions: np.ndarray,
                              actions: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Greedy agreement within each quartile of fp32's action gap: ``(agreements, edges)``,
    four agreements from the narrowest-gap quarter of the observations to the widest, and the
    gap's 25th, 50th and 75th percentiles between them. Where flips are near-ties, the
    disagreement sits in the first quarter."""
    gaps = np.asarray(gaps, np.float64)
    if gaps.shape != np.shape(reference_actions) or gaps.size < 4:
        raise ValueError(f"need >= 4 gaps, one per action, got {gaps.shape} and "
                         f"{np.shape(reference_actions)}")
    order = np.argsort(gaps, kind="stable")
    quarters = np.array_split(order, 4)
    agreements = tuple(action_agreement(np.asarray(reference_actions)[rows],
                                        np.asarray(actions)[rows]) for rows in quarters)
    edges = tuple(float(e) for e in np.percentile(gaps, (25, 50, 75)))
    return agreements, edges


def action_distances(reference_actions: np.ndarray, actions: np.ndarray) -> tuple[float, float]:
    """``(mean L2 distance over rows, max abs difference)`` of two ``[n, d]`` action arrays."""
    ref = np.asarray(reference_actions, np.float64)
    other = np.asarray(actions, np.float64)
    if ref.shape != other.shape or ref.size == 0:
        raise ValueError(f"need equal, non-empty action arrays, got {ref.shape}, {other.shape}")
    diff = (other - ref).reshape(ref.shape[0], -1)
    return float(np.mean(np.linalg.norm(diff, axis=-1))), float(np.max(np.abs(diff)))


def relative_error(reference: float, value: float) -> float | None:
    """``(reference - value) / |reference|``; None when the reference is 0 (undefined)."""
    if reference == 0 or not math.isfinite(reference):
        return None
    return (reference - value) / abs(reference)


@dataclasses.dataclass(frozen=True)
class PrecisionResult:
    """One precision's row of the PTQ table (see the module docstring for definitions).

    Discrete-only fields (``kl_*``, ``agreement``) and continuous-only ones (``l2_mean``,
    ``max_abs``) are None for the other kind of policy.
    """

    quantizer: str
    package_bytes: int
    returns: tuple[float, ...]
    mean_return: float
    std_return: float
    relative_error: float | None
    kl_mean: float | None = None
    kl_max: float | None = None
    agreement: float | None = None
    gap_error_median: float | None = None
    agreement_wide_gaps: float | None = None
    agreement_by_gap_quartile: tuple[float, ...] | None = None
    l2_mean: float | None = None
    max_abs: float | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class PTQStudy:
    """Everything a PTQ study measured; ``actions`` holds each precision's actions on the shared
    observations (for plots; not serialized)."""

    run_dir: str
    agent: str
    task: str
    discrete: bool
    checkpoint_step: int
    learner_steps: int
    episodes: int
    seed: int
    episode_seeds: tuple[int, ...]
    temperature: float
    runtime: str
    num_observations: int
    num_outputs: int
    results: tuple[PrecisionResult, ...]
    actions: dict[str, np.ndarray] = dataclasses.field(repr=False)
    q_abs_median: float | None = None  # discrete: fp32's median |Q| on the shared observations
    action_gap_median: float | None = None  # discrete: fp32's median best-minus-second gap
    action_gap_quartiles: tuple[float, ...] | None = None  # discrete: its 25/50/75th percentiles

    def result(self, quantizer: str) -> PrecisionResult:
        """The row of ``quantizer``."""
        for row in self.results:
            if row.quantizer == quantizer:
                return row
        raise KeyError(f"{quantizer!r} not in this study ({[r.quantizer for r in self.results]})")

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary (non-finite floats become None)."""
        skip = ("results", "actions")
        fields = [f.name for f in dataclasses.fields(self) if f.name not in skip]
        out = {name: getattr(self, name) for name in fields}
        out["episode_seeds"] = list(self.episode_seeds)
        out["baseline"] = BASELINE
        out["definitions"] = {
            "return": "mean and population std (ddof=0) over the shared-seed episodes",
            "relative_error": "(fp32_mean - quant_mean) / |fp32_mean|",
            "kl": "KL(softmax(Q_fp32/T) || softmax(Q_quant/T)) in nats, T=temperature",
            "agreement": "fraction of shared observations with equal greedy actions",
            "gap_error_median": "median over shared observations of |(Q_quant[a1] - Q_quant[a2])"
                                " - (Q_fp32[a1] - Q_fp32[a2])|, a1/a2 = fp32's best/second",
            "agreement_wide_gaps": "agreement on the shared observations whose fp32 action gap "
                                   "is at least its median (where the choice matters most)",
            "agreement_by_gap_quartile": "agreement in each quarter of the shared observations "
                                         "ordered by fp32's action gap, narrowest first",
            "l2_mean": "mean over shared observations of ||a_fp32 - a_quant||_2",
            "max_abs": "max over observations and dimensions of |a_fp32 - a_quant|",
        }
        rows = []
        for row in self.results:
            entry = dataclasses.asdict(row)
            entry["returns"] = list(row.returns)
            entry["action_summary"] = _action_summary(self.actions[row.quantizer], self.discrete,
                                                      self.num_outputs)
            rows.append(entry)
        out["results"] = rows
        return json_safe(out)


def _action_summary(actions: np.ndarray, discrete: bool, width: int) -> dict[str, Any]:
    if discrete:
        counts = np.bincount(actions.astype(np.int64), minlength=width)
        return {"action_counts": [int(c) for c in counts]}
    return {"mean": actions.mean(axis=0).tolist(), "std": actions.std(axis=0).tolist()}


def _rollouts(
    policy: TrainedPolicy, runtime: Any, seeds: Sequence[int], record: list[np.ndarray] | None
) -> list[float]:
    """Greedy returns of the loaded ``runtime`` on one fresh env per seed (observations kept)."""
    builder = policy.builder

    def act(observation: np.ndarray) -> np.ndarray:
        observation = np.asarray(observation)  # runtimes prepare it (pixels stay uint8)
        if record is not None:
            record.append(observation.copy())
        outputs = runtime(observation[None])
        return builder.evaluation_action(outputs)[0]

    returns = []
    for episode_seed in seeds:
        env = make_environment(policy.task, seed=episode_seed, evaluation=True)
        try:
            returns.extend(evaluate(env, act, 1))
        finally:
            env.close()
    return returns


def calibration_observations(policy: TrainedPolicy, fp32_runtime: Any, seed: int,
                             episodes: int = CALIBRATION_EPISODES,
                             size: int = CALIBRATION_SIZE) -> np.ndarray:
    """Observations for quantizers that calibrate (GPTQ): ``size`` evenly spaced states of the
    fp32 policy's greedy rollouts on ``episodes`` episodes whose seeds are not evaluated (they
    derive from ``seed + 1``; :func:`episode_seeds` keeps nearby seeds apart)."""
    record: list[np.ndarray] = []
    _rollouts(policy, fp32_runtime, episode_seeds(seed + 1, episodes), record)
    obs = np.stack(record)
    return obs[np.linspace(0, len(obs) - 1, min(size, len(obs))).astype(np.int64)]


def run_ptq_study(
    policy: TrainedPolicy,
    quantizers: str | Sequence[str] = DEFAULT_QUANTIZERS,
    episodes: int = 10,
    seed: int = 0,
    temperature: float = DEFAULT_TEMPERATURE,
    runtime: str = "xla",
    max_observations: int = 5000,
) -> PTQStudy:
    """Evaluates ``policy`` at every precision on shared-seed episodes; see the module docstring.

    Args:
      policy: from :func:`actorq.analysis.trained_policy.load_trained_policy`.
      quantizers: registry specs; fp32 is always included (first) as the reference.
      episodes: evaluation episodes per precision (the same ``episodes`` env seeds for all).
      seed: derives the episode seeds (:func:`episode_seeds`).
      temperature: softmax temperature of the KL divergence (discrete policies).
      runtime: the actor runtime that runs the packages (``xla`` or ``onnxruntime``).
      max_observations: cap on the shared observation set (evenly subsampled beyond it).
    """
    specs = parse_quantizers(quantizers)
    seeds = episode_seeds(seed, episodes)
    if max_observations < 1:
        raise ValueError(f"max_observations must be >= 1, got {max_observations}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    builder = policy.builder

    runtimes: dict[str, Any] = {}
    package_bytes: dict[str, int] = {}
    returns: dict[str, list[float]] = {}
    observations: list[np.ndarray] = []
    calibration: np.ndarray | None = None
    for spec in specs:
        if calibration is None and hasattr(make_quantizer(spec), "with_calibration"):
            calibration = calibration_observations(policy, runtimes[BASELINE], seed)
        package = policy.package(spec, calibration)
        package_bytes[spec] = len(package.to_bytes())
        rt = make_policy_runtime(runtime)
        rt.load(package)
        runtimes[spec] = rt
        # Only the fp32 rollouts supply the shared observations (the reference state visitation).
        returns[spec] = _rollouts(policy, rt, seeds, observations if spec == BASELINE else None)

    obs = np.stack(observations)  # raw: each runtime prepares them (pixels stay uint8)
    if len(obs) > max_observations:
        obs = obs[np.linspace(0, len(obs) - 1, max_observations).astype(np.int64)]
    reference_outputs = np.asarray(runtimes[BASELINE](obs))
    reference_actions = np.asarray(builder.evaluation_action(reference_outputs))

    base_mean = float(np.mean(returns[BASELINE]))
    results = []
    actions: dict[str, np.ndarray] = {}
    if policy.discrete:
        gaps = action_gap_errors(reference_outputs, reference_outputs)[0]
        wide = gaps >= np.median(gaps)
    for spec in specs:
        # The baseline reuses the reference outputs so its divergence is exactly zero.
        outputs = reference_outputs if spec == BASELINE else np.asarray(runtimes[spec](obs))
        acts = np.asarray(builder.evaluation_action(outputs))
        actions[spec] = acts
        mean = float(np.mean(returns[spec]))
        divergence: dict[str, float] = {}
        if policy.discrete:
            kl = kl_divergence(reference_outputs, outputs, temperature)
            divergence = {
                "kl_mean": float(np.mean(kl)),
                "kl_max": float(np.max(kl)),
                "agreement": action_agreement(reference_actions, acts),
                "gap_error_median": float(np.median(
                    action_gap_errors(reference_outputs, outputs)[1])),
                "agreement_wide_gaps": action_agreement(reference_actions[wide], acts[wide]),
                "agreement_by_gap_quartile": agreement_by_gap_quartile(
                    gaps, reference_actions, acts)[0],
            }
        else:
            l2, max_abs = action_distances(reference_actions, acts)
            divergence = {"l2_mean": l2, "max_abs": max_abs}
        results.append(
            PrecisionResult(
                quantizer=spec,
                package_bytes=package_bytes[spec],
                returns=tuple(float(r) for r in returns[spec]),
                mean_return=mean,
                std_return=float(np.std(returns[spec])),
                relative_error=0.0 if spec == BASELINE else relative_error(base_mean, mean),
                **divergence,
            )
        )
    gap_stats: dict[str, float] = {}
    if policy.discrete:
        gap_stats = {
            "q_abs_median": float(np.median(np.abs(reference_outputs))),
            "action_gap_median": float(np.median(gaps)),
            "action_gap_quartiles": agreement_by_gap_quartile(
                gaps, reference_actions, reference_actions)[1],
        }
    return PTQStudy(
        run_dir=str(policy.run_dir),
        agent=policy.agent,
        task=policy.task,
        discrete=policy.discrete,
        checkpoint_step=policy.checkpoint_step,
        learner_steps=policy.learner_steps,
        episodes=episodes,
        seed=int(seed),
        episode_seeds=tuple(seeds),
        temperature=float(temperature),
        runtime=runtime,
        num_observations=int(len(obs)),
        num_outputs=int(policy.network.output_size),
        results=tuple(results),
        actions=actions,
        **gap_stats,
    )


def _fmt(value: float | None, fmt: str) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return format(value, fmt)


def ptq_markdown_table(study: PTQStudy) -> str:
    """The study as a Markdown table, one row per precision (like the paper's Table 2)."""
    if study.discrete:
        extra = [f"KL(fp32‖q) mean (T={study.temperature:g})", "KL max", "action agreement",
                 "action-gap error (median)", "agreement where gap >= median"]
    else:
        extra = ["mean L2 action distance", "max abs action diff"]
    header = ["precision", "package bytes", "return (mean ± std)", "rel. error vs fp32", *extra]
    align = ["---", *["---:"] * (len(header) - 1)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    for row in study.results:
        err = None if row.relative_error is None else 100.0 * row.relative_error
        cells = [
            row.quantizer,
            str(row.package_bytes),
            f"{row.mean_return:.2f} ± {row.std_return:.2f}",
            "—" if err is None else f"{err:.2f}%",
        ]
        if study.discrete:
            cells += [_fmt(row.kl_mean, ".3g"), _fmt(row.kl_max, ".3g"),
                      _fmt(None if row.agreement is None else 100 * row.agreement, ".1f") + "%",
                      _fmt(row.gap_error_median, ".3g"),
                      _fmt(None if row.agreement_wide_gaps is None
                           else 100 * row.agreement_wide_gaps, ".1f") + "%"]
        else:
            cells += [_fmt(row.l2_mean, ".3g"), _fmt(row.max_abs, ".3g")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _gap_quartile_table(study: PTQStudy) -> list[str]:
    """Report lines: each precision's greedy agreement per quarter of fp32's action gap."""
    e1, e2, e3 = study.action_gap_quartiles
    heads = [f"gap < {e1:.3g}", f"{e1:.3g} - {e2:.3g}", f"{e2:.3g} - {e3:.3g}", f">= {e3:.3g}"]
    lines = ["Greedy agreement in each quarter of the observations, ordered by fp32's action gap "
             "(narrowest first):", "",
             "| precision | " + " | ".join(heads) + " |", "|---|" + "---:|" * 4]
    for row in study.results:
        if row.agreement_by_gap_quartile is not None:
            cells = [f"{100 * a:.1f}%" for a in row.agreement_by_gap_quartile]
            lines.append(f"| {row.quantizer} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def plot_action_distributions(study: PTQStudy, path: str | Path,
                              compare: str = DEFAULT_COMPARE) -> Path:
    """fp32 vs ``compare`` actions on the shared observations (the paper's Fig. 3).

    Discrete policies: the frequency of each greedy action. Continuous policies: one histogram
    per action dimension (bins over [-1, 1]), the two precisions overlaid.
    """
    if compare not in study.actions:
        raise KeyError(f"{compare!r} not in this study ({sorted(study.actions)})")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    specs = [BASELINE] if compare == BASELINE else [BASELINE, compare]
    title = f"{study.agent.upper()} {study.task}: actions on {study.num_observations} observations"
    if study.discrete:
        width = study.num_outputs
        fig = Figure(figsize=(max(4.5, 0.9 * width + 3), 3.8))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        positions = np.arange(width)
        bar = 0.8 / len(specs)
        for i, spec in enumerate(specs):
            counts = np.bincount(study.actions[spec].astype(np.int64), minlength=width)
            ax.bar(positions + (i - (len(specs) - 1) / 2) * bar, counts / counts.sum(),
                   width=bar, label=spec)
        ax.set_xticks(positions, [str(a) for a in positions])
        ax.set_xlabel("greedy action")
        ax.set_ylabel("frequency")
        ax.set_title(title, fontsize="medium")
        ax.legend(fontsize="small")
    else:
        # The action width, not the network's: a SAC policy outputs a mean and a log-std per action.
        dims = study.actions[BASELINE].shape[1]
        cols = min(4, dims)
        rows = math.ceil(dims / cols)
        fig = Figure(figsize=(max(5.5, 3.2 * cols), 2.6 * rows + 0.6))
        FigureCanvasAgg(fig)
        axes = fig.subplots(rows, cols, squeeze=False)
        bins = np.linspace(-1.0, 1.0, 41)
        for d in range(rows * cols):
            ax = axes[d // cols][d % cols]
            if d >= dims:
                ax.axis("off")
                continue
            for spec in specs:
                ax.hist(np.clip(study.actions[spec][:, d], -1, 1), bins=bins, histtype="step",
                        density=True, label=spec, linewidth=1.2)
            ax.set_title(f"action dim {d}", fontsize="small")
            ax.set_xlabel("action", fontsize="small")
            if d % cols == 0:
                ax.set_ylabel("density", fontsize="small")
            if d == 0:
                ax.legend(fontsize="x-small")
        fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return out


def write_ptq_report(study: PTQStudy, out_dir: str | Path,
                     compare: str = DEFAULT_COMPARE) -> dict[str, Path]:
    """Writes ``ptq.md``, ``ptq.json`` and the fp32-vs-``compare`` action-distribution PNG.

    When ``compare`` was not studied the PNG compares fp32 with the last other precision (or
    shows fp32 alone). The tables are written before the plot, so a failing plot loses no
    measurement. Returns ``{"md": ..., "json": ..., "png": ...}``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    others = [r.quantizer for r in study.results if r.quantizer != BASELINE]
    if compare not in study.actions:
        compare = others[-1] if others else BASELINE
    png = out / f"actions_{safe_name(BASELINE)}_vs_{safe_name(compare)}.png"
    kind = (
        f"KL(softmax(Q_fp32/T) ‖ softmax(Q_q/T)) in nats with T={study.temperature:g}, and the "
        "fraction of observations with the same greedy action"
        if study.discrete
        else "mean L2 distance between action vectors and the max absolute difference"
    )
    lines = [
        f"# Post-training quantization: {study.agent.upper()} {study.task}",
        "",
        f"Run: `{study.run_dir}` (checkpoint at actor step {study.checkpoint_step}, "
        f"{study.learner_steps} learner steps). Runtime: {study.runtime}.",
        "",
        f"Returns: {study.episodes} noise-free episodes per precision, the same environment seeds "
        f"for every precision (study seed {study.seed}); mean ± population std. Relative error = "
        "(fp32 − quantized) / |fp32| of the mean returns (positive = quantized earns less).",
        "",
        f"Action divergence on {study.num_observations} observations from the fp32 rollouts, "
        f"fed to every precision: {kind}.",
        "",
        ptq_markdown_table(study),
        *([f"fp32's Q-values on these observations: median |Q| {study.q_abs_median:.3g}, median "
           f"action gap (best minus second best) {study.action_gap_median:.3g}. A greedy action "
           "flips only where quantization moves that gap by more than the gap itself, so a "
           "precision's action agreement follows its action-gap error relative to the gap.", ""]
          if study.discrete and study.q_abs_median is not None else []),
        *(_gap_quartile_table(study) if study.discrete and study.action_gap_quartiles else []),
        f"![actions]({png.name})",
        "",
    ]
    md = out / "ptq.md"
    md.write_text("\n".join(lines))
    js = out / "ptq.json"
    payload = study.to_dict()
    payload["plot"] = png.name
    js.write_text(json.dumps(payload, indent=2, allow_nan=False) + "\n")
    plot_action_distributions(study, png, compare)
    return {"md": md, "json": js, "png": png}
