"""Entry point shared by the experiment scripts: pick the launcher from the config."""

from __future__ import annotations

from typing import Any

import ml_collections

from launchpad_programs.run_directory import RunDirectory, default_run_dir

LAUNCHERS = ("single", "local", "ray")


def _distributed(config: ml_collections.ConfigDict) -> bool:
    return config.launcher != "single" and config.num_actors > 0


def check_config(config: ml_collections.ConfigDict) -> None:
    """Fails fast on a config that cannot run, before anything is created or written.

    Raises ValueError (unknown launcher, quantizer or runtime; a bad ``envs_per_actor`` or
    ``num_actors``) or ImportError (``ray`` without Ray installed), each naming the valid choices.
    """
    if config.launcher not in LAUNCHERS:
        raise ValueError(f"unknown launcher {config.launcher!r}; valid: {', '.join(LAUNCHERS)}")
    from actorq.quantization import make_quantizer
    from actorq.runtime.policy_runtime import make_policy_runtime
    from launchpad_programs.nodes import actor_quantizers, envs_per_actor
    from launchpad_programs.pacing import check_pacing

    make_quantizer(config.quantizer)
    for name in actor_quantizers(config):
        make_quantizer(name)
    make_policy_runtime(config.actor_runtime)
    envs_per_actor(config)
    check_pacing(config)
    from launchpad_programs.placement import select_learner_device

    select_learner_device(config.get("learner_device", "auto"))
    if _distributed(config):
        from launchpad_programs.distributed import check_launcher

        check_launcher(config)


def run_experiment(config: ml_collections.ConfigDict, resume: bool = False) -> dict[str, Any]:
    """Runs the experiment described by ``config`` with its launcher; returns the summary."""
    from launchpad_programs.placement import learner_device_scope

    check_config(config)
    # Fails (no GPU for learner_device='gpu') before the run directory is created.
    with learner_device_scope(config.get("learner_device", "auto")) as device:
        run_dir = RunDirectory(default_run_dir(config), config, resume)
        if not _distributed(config):
            from launchpad_programs.single_process import run_single_process

            summary = run_single_process(config, run_dir, resume)
        else:
            from launchpad_programs.distributed import run_distributed

            summary = run_distributed(config, run_dir, resume)
    summary["learner_device"] = f"{device.platform}:{device.id}"
    run_dir.write_json("summary.json", summary)
    return summary
