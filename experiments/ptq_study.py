"""Post-training quantization study of a trained run (QuaRL Table 2 and Fig. 3).

    python -m experiments.ptq_study --run_dir=runs/dqn_cartpole_fp32_seed0 --episodes=10 \\
        --quantizers=fp32,fp16,bf16,int8,int7,int6,int5,int4,int3,int2

Restores the run's newest checkpoint, quantizes its fp32 policy with every quantizer, evaluates
each on the same episode seeds and compares actions on the fp32 rollouts' observations. Writes
``ptq.md``, ``ptq.json`` and an fp32-vs-int8 action-distribution PNG to ``--out_dir`` (default
``<run_dir>/ptq``). Definitions: :mod:`actorq.analysis.ptq`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from absl import flags

from actorq.analysis.ptq import (
    DEFAULT_COMPARE,
    DEFAULT_QUANTIZERS,
    DEFAULT_TEMPERATURE,
    parse_quantizers,
    run_ptq_study,
    write_ptq_report,
)
from actorq.analysis.runs import has_checkpoint
from actorq.analysis.trained_policy import load_trained_policy
from actorq.command_line import bad_input, run_absl
from actorq.runtime.policy_runtime import make_policy_runtime


def ptq_study(
    run_dir: str | Path,
    quantizers: str | Sequence[str] = DEFAULT_QUANTIZERS,
    episodes: int = 10,
    out_dir: str | Path | None = None,
    seed: int = 0,
    temperature: float = DEFAULT_TEMPERATURE,
    runtime: str = "xla",
    max_observations: int = 5000,
    compare: str = DEFAULT_COMPARE,
) -> Path:
    """Runs the study on ``run_dir``'s policy and writes the report; returns ``ptq.md``'s path."""
    specs = check_study_args(run_dir, quantizers, episodes, temperature, runtime,
                             max_observations)
    policy = load_trained_policy(run_dir)
    study = run_ptq_study(policy, specs, episodes, seed, temperature, runtime, max_observations)
    paths = write_ptq_report(study, out_dir or Path(run_dir) / "ptq", compare)
    return paths["md"]


def check_study_args(run_dir: str | Path, quantizers: str | Sequence[str], episodes: int,
                     temperature: float, runtime: str, max_observations: int) -> list[str]:
    """Validates the study's inputs before anything loads; returns the quantizer list.
    Raises ValueError or FileNotFoundError naming the bad input."""
    specs = parse_quantizers(quantizers)
    if episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {episodes}")
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"--temperature must be a finite number > 0, got {temperature}")
    if max_observations < 1:
        raise ValueError(f"--max_observations must be >= 1, got {max_observations}")
    make_policy_runtime(runtime)  # names the valid runtimes
    path = Path(run_dir)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"--run_dir {path} holds no run (no config.json)")
    if not has_checkpoint(path):
        raise FileNotFoundError(f"--run_dir {path} holds no checkpoint to load a policy from")
    return specs


def _define_flags() -> None:
    flags.DEFINE_string("run_dir", None, "A run directory with a checkpoint.", required=True)
    flags.DEFINE_integer("episodes", 10, "Evaluation episodes per precision (shared seeds).")
    flags.DEFINE_list("quantizers", list(DEFAULT_QUANTIZERS), "Precisions (fp32 is always in).")
    flags.DEFINE_string("out_dir", "", "Report folder (default: <run_dir>/ptq).")
    flags.DEFINE_integer("seed", 0, "Derives the shared episode seeds.")
    flags.DEFINE_float("temperature", DEFAULT_TEMPERATURE, "Softmax temperature of the KL "
                       "divergence between Q-value distributions (discrete policies).")
    flags.DEFINE_string("runtime", "xla", "Actor runtime that runs the packages.")
    flags.DEFINE_integer("max_observations", 5000, "Cap on shared observations for divergence.")
    flags.DEFINE_string("compare", DEFAULT_COMPARE, "Precision plotted against fp32.")


def main(argv: list[str]) -> None:
    """Runs the study from flags and prints the table."""
    del argv
    f = flags.FLAGS
    with bad_input():
        check_study_args(f.run_dir, f.quantizers, f.episodes, f.temperature, f.runtime,
                         f.max_observations)
    md = ptq_study(f.run_dir, f.quantizers, f.episodes, f.out_dir or None, f.seed,
                   f.temperature, f.runtime, f.max_observations, f.compare)
    print(md.read_text())


if __name__ == "__main__":
    _define_flags()
    run_absl(main)
