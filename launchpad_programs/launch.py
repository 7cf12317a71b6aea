"""Entry point shared by the experiment scripts: pick the launcher from the config."""

from __future__ import annotations

from typing import Any

import ml_collections

from launchpad_programs.run_directory import RunDirectory, default_run_dir

LAUNCHERS = ("single", "local", "ray")


def run_experiment(config: ml_collections.ConfigDict, resume: bool = False) -> dict[str, Any]:
    """Runs the experiment described by ``config`` with its launcher; returns the summary."""
    if config.launcher not in LAUNCHERS:
        raise ValueError(f"unknown launcher {config.launcher!r}; valid: {', '.join(LAUNCHERS)}")
    from actorq.quantization import make_quantizer
    from actorq.runtime.policy_runtime import make_policy_runtime
    from launchpad_programs.nodes import envs_per_actor

    make_quantizer(config.quantizer)  # fail fast on a bad spec, before creating the run dir
    make_policy_runtime(config.actor_runtime)
    envs_per_actor(config)
    distributed = config.launcher != "single" and config.num_actors > 0
    if distributed:
        from launchpad_programs.distributed import check_launcher

        check_launcher(config)  # e.g. ray missing: fail before creating the run directory
    run_dir = RunDirectory(default_run_dir(config), config, resume)
    if not distributed:
        from launchpad_programs.single_process import run_single_process

        return run_single_process(config, run_dir, resume)
    from launchpad_programs.distributed import run_distributed

    return run_distributed(config, run_dir, resume)
