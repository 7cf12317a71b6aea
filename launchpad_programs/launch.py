"""Entry point shared by the experiment scripts: the ActorQ program of a config, run with the
config's launcher."""

from __future__ import annotations

from typing import Any

import ml_collections

from actorq.command_line import check_writable_dir
from launchpad_programs.actorq_program import make_program
from launchpad_programs.launchers import LAUNCHERS, launch
from launchpad_programs.run_directory import RunDirectory, default_run_dir


def check_config(config: ml_collections.ConfigDict) -> None:
    """Fails fast on a config that cannot run, before anything is created or written.

    Raises ValueError (a numeric field out of its bounds: ``configs.common.EXPERIMENT_BOUNDS``
    and the agent config's ``BOUNDS``; unknown launcher, quantizer or runtime; a bad
    ``envs_per_actor`` or ``num_actors``) or ImportError (``ray`` without Ray installed), each
    naming the valid choices.
    """
    from actorq.agents.registry import agent_config
    from actorq.analysis.runs import config_to_dict, flatten_config
    from actorq.bounds import check_bounds
    from configs.common import EXPERIMENT_BOUNDS

    values = flatten_config(config_to_dict(config))
    missing = sorted(set(EXPERIMENT_BOUNDS) - set(values))
    if missing:
        raise ValueError(f"the config lacks the experiment fields {missing}")
    check_bounds(values, EXPERIMENT_BOUNDS)
    if config.replay.min_size > config.replay.max_size:
        raise ValueError(f"replay.min_size={config.replay.min_size} is above "
                         f"replay.max_size={config.replay.max_size}: the learner could never start")
    learner = agent_config(config.agent, config.learner.to_dict())  # the fields' own bounds
    if hasattr(learner, "torso"):  # the network must read the task's observations
        from actorq.envs.registry import is_pixel
        from actorq.networks.sizes import check_torso_fits

        check_torso_fits(learner.torso, () if is_pixel(config.task) else None)
    if config.launcher not in LAUNCHERS:
        raise ValueError(f"unknown launcher {config.launcher!r}; valid: {', '.join(LAUNCHERS)}")
    from actorq.quantization import make_quantizer
    from actorq.runtime.policy_runtime import make_policy_runtime
    from launchpad_programs.nodes import actor_quantizers, envs_per_actor, fp32_package_versions
    from launchpad_programs.pacing import check_pacing

    make_quantizer(config.quantizer)
    for name in actor_quantizers(config):
        make_quantizer(name)
    make_policy_runtime(config.actor_runtime)
    envs_per_actor(config)
    fp32_package_versions(config)
    check_pacing(config)
    from launchpad_programs.placement import select_learner_device

    select_learner_device(config.learner_device)
    from launchpad_programs.placement import ray_actor_options, ray_learner_options

    ray_actor_options(config)
    ray_learner_options(config)
    if config.launcher != "single" and int(config.num_actors) < 1:
        raise ValueError(f"launcher {config.launcher!r} needs num_actors >= 1, got "
                         f"{config.num_actors}; use launcher 'single' for one interleaved actor")
    if config.launcher == "ray":
        from launchpad_programs.launchers.ray import import_ray

        import_ray()


def check_run_directory(config: ml_collections.ConfigDict, resume: bool) -> None:
    """Fails fast on a run directory that cannot take this run, before anything is written:
    not creatable or writable, already holding a run (without ``resume``), holding no run to
    resume, or holding a run whose config differs in a key a resume may not change. Raises
    OSError or ValueError with a one-line message."""
    path = default_run_dir(config)
    check_writable_dir(path, "--config.run_dir")
    RunDirectory.check(path, config, resume)


def run_experiment(config: ml_collections.ConfigDict, resume: bool = False) -> dict[str, Any]:
    """Runs the experiment described by ``config`` with its launcher; returns the summary."""
    from launchpad_programs.placement import learner_device_scope

    check_config(config)
    # Fails (no GPU for learner_device='gpu') before the run directory is created.
    with learner_device_scope(config.learner_device) as device:
        run_dir = RunDirectory(default_run_dir(config), config, resume)
        program = make_program(config, run_dir, resume)
        summary = launch(program, config.launcher,
                         shutdown_timeout=float(config.shutdown_timeout_s),
                         ray_address=config.ray_address or None)
    summary["learner_device"] = f"{device.platform}:{device.id}"
    run_dir.write_json("summary.json", summary)
    return summary
