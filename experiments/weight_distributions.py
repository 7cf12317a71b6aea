"""Per-layer weight histograms of trained policies with the int8 grid drawn (the QuaRL code's plot).

    python -m experiments.weight_distributions --out_dir=docs/results/weights \\
        --run_dirs=runs/table2/dqn_cartpole,runs/table2/ppo_cartpole

Restores each run's newest checkpoint and writes, per run, ``<agent>_<task>_<run>.png`` (one panel
per layer: fp32 weight histogram, the per-tensor affine int<b> grid over it), and for all runs
``weights.md`` / ``weights.json``: per layer the range, the step of the paper's per-tensor affine
grid against actorq's per-output-channel steps, the relative RMS error of each grid and the share
of non-zero weights each rounds to 0. Definitions: :mod:`actorq.analysis.weights`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from absl import flags

from actorq.analysis.report import json_safe
from actorq.analysis.runs import has_checkpoint
from actorq.analysis.trained_policy import load_trained_policy
from actorq.analysis.weights import (
    layer_weight_stats,
    plot_weight_distributions,
    weight_stats_markdown,
)
from actorq.command_line import bad_input, check_writable_dir, run_absl
from actorq.quantization.numerics import check_bits


def check_run_dirs(run_dirs: Sequence[str | Path]) -> list[Path]:
    """The run directories, each holding a config and a checkpoint; FileNotFoundError naming
    the first that does not."""
    paths = [Path(p) for p in run_dirs if str(p).strip()]
    if not paths:
        raise ValueError("--run_dirs is empty")
    for path in paths:
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"--run_dirs: {path} holds no run (no config.json)")
        if not has_checkpoint(path):
            raise FileNotFoundError(f"--run_dirs: {path} holds no checkpoint")
    return paths


def weight_distributions(run_dirs: Sequence[str | Path], out_dir: str | Path,
                         bits: int = 8) -> Path:
    """Writes the plots, ``weights.md`` and ``weights.json``; returns the .md path."""
    check_bits(bits)
    paths = check_run_dirs(run_dirs)
    out = check_writable_dir(out_dir, "--out_dir")
    sections = [
        f"# Weight distributions of trained policies and the int{bits} grid",
        "",
        f"Per layer: the fp32 weights, the step of the paper's per-tensor affine int{bits} grid "
        "against actorq's per-output-channel steps (`rtn_int8`, the recipe's weight grid), the "
        "relative RMS error ||W_q - W|| / ||W|| of each, and the share of non-zero weights each "
        "rounds to 0.",
        "",
    ]
    payload = []
    for path in paths:
        policy = load_trained_policy(path)
        fp32 = policy.package("fp32")
        stats = layer_weight_stats(fp32, policy.package(f"rtn_int{bits}"), bits)
        name = f"{policy.agent}_{policy.task}_{path.name}"
        png = plot_weight_distributions(fp32, out / f"{name}.png",
                                        f"{policy.agent.upper()} {policy.task} ({path.name})",
                                        bits)
        sections += [f"## {policy.agent.upper()} {policy.task}", "",
                     f"Run `{path}`, checkpoint at learner step {policy.learner_steps}.", "",
                     weight_stats_markdown(stats, bits), f"![{name}]({png.name})", ""]
        payload.append({"run_dir": str(path), "agent": policy.agent, "task": policy.task,
                        "learner_steps": policy.learner_steps, "plot": png.name,
                        "layers": stats})
    md = out / "weights.md"
    md.write_text("\n".join(sections))
    (out / "weights.json").write_text(json.dumps(json_safe({"bits": bits, "runs": payload}),
                                                 indent=2) + "\n")
    return md


def _define_flags() -> None:
    flags.DEFINE_list("run_dirs", None, "Run directories with checkpoints.", required=True)
    flags.DEFINE_string("out_dir", "runs/weights", "Report folder.")
    flags.DEFINE_integer("bits", 8, "Grid bit width (2..8).")


def main(argv: list[str]) -> None:
    """Writes the report and prints it."""
    del argv
    f = flags.FLAGS
    with bad_input():
        check_bits(f.bits)
        check_run_dirs(f.run_dirs)
        check_writable_dir(f.out_dir, "--out_dir")
    print(weight_distributions(f.run_dirs, f.out_dir, f.bits).read_text())


if __name__ == "__main__":
    _define_flags()
    run_absl(main)
