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
"""

from __future__ import annotations

from pathlib import Path

from absl import flags

from actorq.analysis.report import find_run_dirs, write_speedup_report
from actorq.command_line import bad_input, check_writable_dir, parse_ints, run_absl
from launchpad_programs.study_runs import check_grid, run_grid


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
    with bad_input():
        read_mode = bool(f.run_dirs or f.runs_root)
        if read_mode and f.config is not None:
            raise ValueError("give either --config (run mode) or --run_dirs/--runs_root (read)")
        if f.run_dirs and f.runs_root:
            raise ValueError("give --run_dirs or --runs_root, not both")
        if not (0 < f.fraction <= 1):
            raise ValueError(f"--fraction must be in (0, 1], got {f.fraction}")
        if f.window < 1:
            raise ValueError(f"--window must be >= 1, got {f.window}")
        if read_mode:
            if f.runs_root and not Path(f.runs_root).is_dir():
                raise FileNotFoundError(f"--runs_root {f.runs_root} is not a directory")
            dirs = [Path(d) for d in f.run_dirs] if f.run_dirs else find_run_dirs(f.runs_root)
            if not dirs:
                raise FileNotFoundError(f"no run directories (config.json) under {f.runs_root}")
            missing = [str(d) for d in dirs if not (d / "config.json").is_file()]
            if missing:
                raise FileNotFoundError(f"--run_dirs without a run (no config.json): {missing}")
            out_dir = f.out_dir or f.runs_root
            if not out_dir:
                raise ValueError("--out_dir is required with --run_dirs")
        elif f.config is not None:
            if not f.out_dir:
                raise ValueError("--out_dir is required in run mode")
            out_dir = f.out_dir
            seeds = parse_ints(f.seeds, "seeds")
            check_grid(f.config, f.quantizers, seeds, out_dir)
        else:
            raise ValueError("give --config (run mode) or --run_dirs/--runs_root (read mode)")
        check_writable_dir(out_dir, "--out_dir")
    if not read_mode:
        dirs = run_grid(f.config, f.quantizers, seeds, out_dir, f.reuse)
    md = write_speedup_report(dirs, out_dir, f.fraction, f.window)
    print(md.read_text())


if __name__ == "__main__":
    _define_flags()
    run_absl(main)
