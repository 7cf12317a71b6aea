"""A MinAtar run's policy under actorq's evaluation protocol and under the references' protocol.

    python -m experiments.eval_protocols --run_dir=runs/ppo_minatar_breakout/seed0 --episodes=50 \\
        --reference=28

Restores the run's newest checkpoint and plays its fp32 policy and each ``--quantizers`` package
(``fp32,int8`` by default) under four protocols: sticky actions 0.1 (the MinAtar paper's, and
actorq's evaluator) or none (gymnax, PureJaxRL), greedy or sampled actions, on the same episode
seeds (:mod:`actorq.analysis.protocols`). Categorical policies only (PPO, A2C). Writes
``protocols.md`` and ``protocols.json`` to ``--out_dir`` (default ``<run_dir>/protocols``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from absl import flags

from actorq.analysis.protocols import protocol_table
from actorq.analysis.ptq import calibration_observations, parse_quantizers
from actorq.analysis.report import json_safe
from actorq.analysis.runs import has_checkpoint
from actorq.analysis.trained_policy import TrainedPolicy, load_trained_policy, read_run_config
from actorq.command_line import bad_input, run_absl
from actorq.envs.registry import task_family
from actorq.metrics.machine import machine_name
from actorq.quantization import make_quantizer
from actorq.runtime.policy_runtime import make_policy_runtime


def check_args(run_dir: str | Path, quantizers: list[str], episodes: int,
               reference: float | None) -> list[str]:
    """Validates the inputs before anything loads; returns the precisions (fp32 first).
    Raises ValueError or FileNotFoundError naming the bad input."""
    specs = parse_quantizers(quantizers)
    if episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {episodes}")
    if reference is not None and not math.isfinite(reference):
        raise ValueError(f"--reference must be a finite return, got {reference}")
    path = Path(run_dir)
    config = read_run_config(path)
    if task_family(config.task) != "minatar":
        raise ValueError(f"--run_dir {path} is a {config.task} run; protocols cover MinAtar tasks")
    if config.agent not in ("ppo", "a2c"):
        raise ValueError(f"--run_dir {path} is a {config.agent} run; protocols need a categorical "
                         "policy (ppo, a2c)")
    if not has_checkpoint(path):
        raise FileNotFoundError(f"--run_dir {path} holds no checkpoint to load a policy from")
    return specs


def runtimes_of(policy: TrainedPolicy, specs: list[str], seed: int) -> dict:
    """A loaded XLA runtime per precision; calibrating quantizers get fp32 rollout states."""
    runtimes: dict = {}
    calibration = None
    for spec in specs:
        if calibration is None and hasattr(make_quantizer(spec), "with_calibration"):
            calibration = calibration_observations(policy, runtimes["fp32"], seed)
        runtime = make_policy_runtime("xla")
        runtime.load(policy.package(spec, calibration))
        runtimes[spec] = runtime
    return runtimes


def markdown(policy: TrainedPolicy, rows: list[dict], episodes: int, command: str,
             reference: float | None) -> str:
    """The report: one row per (precision, protocol)."""
    lines = [
        f"# Evaluation protocols: {policy.agent} {policy.task}",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {machine_name()}",
        "",
        f"Run: `{policy.run_dir}` (checkpoint at actor step {policy.checkpoint_step}, "
        f"{policy.learner_steps} learner steps). {episodes} episodes per row, the same episode "
        "seeds in every row; mean ± population std (standard error).",
        "",
        "| precision | protocol | return | vs reference |",
        "|---|---|---:|---:|",
    ]
    for r in rows:
        versus = ("-" if reference is None
                  else f"{100 * (r['mean'] - reference) / abs(reference):+.1f}%")
        lines.append(f"| {r['precision']} | {r['protocol']} | {r['mean']:.1f} ± {r['std']:.1f} "
                     f"({r['sem']:.1f}) | {versus} |")
    if reference is not None:
        lines += ["", f"Reference: {reference:g}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    """Plays the policy under every protocol and writes the report."""
    del argv
    f = flags.FLAGS
    with bad_input():
        specs = check_args(f.run_dir, f.quantizers, f.episodes, f.reference)
    policy = load_trained_policy(f.run_dir)
    rows = protocol_table(runtimes_of(policy, specs, f.seed), policy.task, f.episodes, f.seed)
    out_dir = Path(f.out_dir or Path(f.run_dir) / "protocols")
    out_dir.mkdir(parents=True, exist_ok=True)
    command = (f"python -m experiments.eval_protocols --run_dir={f.run_dir} "
               f"--episodes={f.episodes} --quantizers={','.join(f.quantizers)}"
               + (f" --reference={f.reference:g}" if f.reference is not None else ""))
    text = markdown(policy, rows, f.episodes, command, f.reference)
    (out_dir / "protocols.md").write_text(text)
    (out_dir / "protocols.json").write_text(json.dumps(json_safe({
        "run_dir": str(policy.run_dir), "task": policy.task, "agent": policy.agent,
        "checkpoint_step": policy.checkpoint_step, "episodes": f.episodes, "seed": f.seed,
        "reference": f.reference, "machine": machine_name(), "rows": rows}), indent=1))
    print(text)


if __name__ == "__main__":
    flags.DEFINE_string("run_dir", None, "A MinAtar PPO or A2C run with a checkpoint.",
                        required=True)
    flags.DEFINE_integer("episodes", 50, "Episodes per (precision, protocol), shared seeds.")
    flags.DEFINE_list("quantizers", ["fp32", "int8"], "Precisions (fp32 is always in).")
    flags.DEFINE_integer("seed", 0, "Derives the episode seeds and the action sampler's seed.")
    flags.DEFINE_float("reference", None, "A published return to compare against.")
    flags.DEFINE_string("out_dir", "", "Report folder (default: <run_dir>/protocols).")
    run_absl(main)
