"""Launchers: turn any :class:`~launchpad_programs.program.Program` into running nodes.

    from launchpad_programs.launchers import launch
    result = launch(program, "local")

* ``single``: every node in this process and thread, interleaved step by step (debugging,
  small runs, reproducible);
* ``local``: the main node in this process, every other node in its own process (``spawn``),
  channels over pipes and shared memory;
* ``ray``: the main node in this process, every other node as a Ray actor on a local Ray
  instance or the cluster at ``ray_address``, channels over Ray's object store.

Launchers know nodes only through the program: they import no RL code and name no node kind.
"""

from __future__ import annotations

from typing import Any

from launchpad_programs.program import Program

LAUNCHERS = ("single", "local", "ray")


def launch(program: Program, launcher: str = "local", *, shutdown_timeout: float = 5.0,
           ray_address: str | None = None) -> Any:
    """Runs ``program`` with ``launcher`` until its main node finishes (or Ctrl-C / SIGTERM);
    returns what the main node's ``close()`` returns."""
    from launchpad_programs.launchers.main_loop import run_main

    if launcher == "single":
        from launchpad_programs.launchers.single import SingleHost

        host: Any = SingleHost(program)
    elif launcher == "local":
        from launchpad_programs.launchers.local import LocalHost

        host = LocalHost(program)
    elif launcher == "ray":
        from launchpad_programs.launchers.ray import RayHost

        host = RayHost(program, ray_address)
    else:
        raise ValueError(f"unknown launcher {launcher!r}; valid: {', '.join(LAUNCHERS)}")
    return run_main(program, host, shutdown_timeout)
