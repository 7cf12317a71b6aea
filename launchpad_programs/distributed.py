"""Distributed ActorQ: run the program of nodes with the local or the Ray launcher.

    summary = run_distributed(config, run_dir, resume)

``config.launcher``: ``local`` (one process per node on this machine, shared-memory weights) or
``ray`` (Ray actors on a local Ray instance, or the cluster at ``config.ray_address``). Both
write the same run directory as the single-process launcher: ``eval.jsonl``, ``learner.jsonl``,
``actor_{i}.jsonl`` (one row per episode), ``events.jsonl`` (start-ups, restarts, errors),
``pids.json``, ``breakdown.json``/``breakdown.md`` (one row per actor), ``checkpoints/``,
``energy.json`` and ``summary.json``.
"""

from __future__ import annotations

from typing import Any

import ml_collections

from launchpad_programs.program import Program, make_program
from launchpad_programs.run_directory import RunDirectory

__all__ = ["check_launcher", "make_transport", "run_distributed"]


def check_launcher(config: ml_collections.ConfigDict) -> None:
    """Fails fast (before a run directory is created) on a config the launcher cannot run:
    ``num_actors < 1``, an unknown launcher, or ``ray`` without Ray installed."""
    if config.launcher not in ("local", "ray"):
        raise ValueError(f"distributed launcher must be 'local' or 'ray', got {config.launcher!r}")
    if int(config.num_actors) < 1:
        raise ValueError(f"a distributed run needs num_actors >= 1, got {config.num_actors}")
    if config.launcher == "ray":
        from launchpad_programs.ray_launcher import import_ray

        import_ray()


def make_transport(config: ml_collections.ConfigDict) -> Any:
    """The transport of ``config.launcher`` (``local`` or ``ray``)."""
    if config.launcher == "local":
        from launchpad_programs.local_launcher import LocalTransport

        return LocalTransport()
    if config.launcher == "ray":
        from launchpad_programs.ray_launcher import RayTransport

        return RayTransport(config)
    raise ValueError(f"run_distributed needs launcher 'local' or 'ray', got {config.launcher!r}")


def run_distributed(
    config: ml_collections.ConfigDict, run_dir: RunDirectory, resume: bool = False,
    program: Program | None = None,
) -> dict[str, Any]:
    """Trains with ``config.num_actors`` actor nodes until ``config.max_actor_steps`` global
    actor steps; returns (and writes to ``summary.json``) the run summary: ``actor_steps,
    learner_steps, wall_time_s, final_eval_return, interrupted, energy_kwh, emissions_kg,
    bytes_pulled, num_pulls, actor_restarts`` and a few more. Ctrl-C/SIGTERM stop every node,
    save a checkpoint and return with ``interrupted=True``; ``resume`` continues from the last
    checkpoint (learner state, counters and, with ``checkpoint_replay``, replay contents)."""
    from launchpad_programs import nodes
    from launchpad_programs.driver import Driver

    check_launcher(config)
    transport = make_transport(config)  # fails fast (e.g. ray missing) before any work
    builder = nodes.make_builder_for(config)
    program = program if program is not None else make_program(config, builder)
    return Driver(config, run_dir, resume, program, builder, transport).run()
