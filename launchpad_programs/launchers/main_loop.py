"""The loop every launcher runs in the launching process: build the main node, start the others,
step the main node until it finishes or a stop is requested, then stop the others, deliver
their last messages and close the main node."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any, Protocol

from absl import logging

from launchpad_programs.program import FINISHED, NodeContext, Program

SUPERVISE_EVERY_S = 0.2


class Host(Protocol):
    """What a launcher provides around the main node."""

    def main_context(self) -> NodeContext:
        """The main node's context (its channels exist before the node is built)."""

    def start_others(self) -> None:
        """Starts every other node (after the main node was built: it may have published
        variables and set counters the others start from)."""

    def supervise(self) -> None:
        """Notices finished and dead nodes; restarts those that should be. Raises when a node
        keeps dying before it is ready."""

    def after_main_step(self, status: str) -> None:
        """Runs after each main-node step: waits briefly when it was idle, or steps the other
        nodes (the single launcher)."""

    def stop_others(self, timeout: float) -> None:
        """Stops every other node (the stop flag, then terminate), and delivers their last
        messages to the main node's streams."""

    def close(self) -> None:
        """Releases the channels; idempotent."""


class MainContext:
    """The main node's context in the local and Ray launchers: its ends of every channel, held
    by the host (``streams``, ``variables``, ``counters``), and the host's view of the others."""

    def __init__(self, host: Any) -> None:
        self._host = host
        self.name = host.program.main.name
        self.incarnation = 0

    def stream(self, channel: str) -> Any:
        return self._host.streams[channel]

    def variable(self, channel: str) -> Any:
        return self._host.variables[channel]

    def counter(self, channel: str) -> Any:
        return self._host.counters[channel]

    def stopping(self) -> bool:
        return self._host.stopping

    def ready(self, **info: Any) -> None:
        del info  # the main node is ready when it is built

    def events(self) -> list[dict[str, Any]]:
        with self._host.lock:
            events, self._host.events = self._host.events, []
        return events

    def finished(self, names: tuple[str, ...]) -> bool:
        return self._host.finished(names)

    def pids(self) -> dict[str, int]:
        return self._host.pids()


def run_main(program: Program, host: Host, shutdown_timeout: float = 5.0) -> Any:
    """Runs ``program`` on ``host``; returns the main node's ``close()`` value.

    Ctrl-C and SIGTERM set a flag checked between main-node steps (an exception raised inside a
    native call could leave it torn down badly); the main node is then closed with
    ``interrupted=True``. Any error is re-raised after every node was stopped and the main node
    was closed.
    """
    stop = {"requested": False}

    def request_stop(signum: int, frame: Any) -> None:
        del frame
        if not stop["requested"]:
            logging.warning("signal %d: stopping the program", signum)
        stop["requested"] = True

    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = {}
    if in_main_thread:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, request_stop)
    main = program.main
    body = None
    interrupted = False
    failure: BaseException | None = None
    result = None
    try:
        body = main.make(host.main_context(), **main.kwargs)
        if not stop["requested"]:
            host.start_others()
        last_supervise = time.monotonic()
        while True:
            if stop["requested"]:
                interrupted = True
                break
            now = time.monotonic()
            if now - last_supervise >= SUPERVISE_EVERY_S:
                last_supervise = now
                host.supervise()
            status = body.step()
            if status == FINISHED:
                break
            host.after_main_step(status)
    except BaseException as error:  # noqa: BLE001 - every node is stopped first, then re-raised
        failure = error
    finally:
        if in_main_thread:  # shutdown must finish: further signals are ignored (it is bounded)
            for sig in previous:
                signal.signal(sig, signal.SIG_IGN)
        try:
            start = time.perf_counter()
            try:
                host.stop_others(shutdown_timeout)
            except Exception:  # noqa: BLE001
                logging.exception("error while stopping the nodes")
            logging.info("nodes stopped in %.2f s", time.perf_counter() - start)
            if body is not None:
                try:
                    result = body.close(interrupted or failure is not None)
                except BaseException as error:  # noqa: BLE001
                    failure = failure or error
        finally:
            host.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    if failure is not None:
        raise failure
    return result
