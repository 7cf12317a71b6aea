"""The local launcher: one OS process per node on this machine (Launchpad's ``local_mp``).

Processes (``multiprocessing`` 'spawn' context):

* the **driver** (this process): ``learner`` + ``replay`` + ``counter`` (see ``driver.py``); it
  supervises the others, logs, checkpoints, and owns the shared-memory segment;
* ``actor_i`` (one process each, single-threaded XLA): pulls the policy from shared memory every
  ``pull_period`` steps, steps its environment, sends experience chunks;
* ``evaluator``: evaluates the newest package every ``eval_every_steps`` global actor steps.

Channels:

* **weights**: :mod:`launchpad_programs.shared_policy` (double-buffered seqlock segment);
* **experience** + reports: one one-way ``Pipe`` per child process. A per-child pipe (rather
  than one shared queue) means a child killed mid-write can only corrupt its own pipe, which the
  driver drops (EOF) when the child dies;
* **control**: an int64 shared array: stop flag, learner steps, resumed base, the rate
  limiter's global step limit (written by the driver; actors at it flush their experience and
  wait) and one step counter per actor index, each written by its actor alone. Nothing a
  child touches takes a lock, so ``kill -9`` on a child can never deadlock the others. The
  global step count is the base plus the sum of the per-actor counters; actors stop when it
  reaches ``max_actor_steps`` (they may overshoot by at most ``num_actors - 1`` steps).

Failures: the driver restarts a dead actor (same index, fresh seeds, exploration schedule
continued) or evaluator and logs the restart to ``events.jsonl`` and the summary
(``actor_restarts``). On Ctrl-C/SIGTERM it sets the stop flag, joins the children for
``shutdown_timeout_s`` (default 5 s), terminates and then kills stragglers, drains their last
messages, checkpoints and unlinks the segment. Children ignore Ctrl-C (the driver coordinates),
exit on SIGTERM, and exit by themselves if the driver dies (their parent changes or their pipe
breaks); the resource tracker unlinks the segment if the driver was killed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from absl import logging

from launchpad_programs import workers
from launchpad_programs.driver import LaunchContext, Message

# Control array fields (int64).
STOP, LEARNER_STEPS, BASE_STEPS, STEP_LIMIT = 0, 1, 2, 3
SLOTS = 8  # per-actor step counters start here

REPORT_EVERY_S = 1.0
# Consecutive deaths before a node ever acted: the failure is deterministic, stop retrying.
MAX_STARTUP_FAILURES = 3


@dataclasses.dataclass
class ChildSpec:
    """Everything a child process needs (pickled once, at spawn)."""

    node: str
    index: int
    num_actors: int
    config: Any
    shm_names: dict[str, str]  # weights channel: one shared-memory segment per precision
    control: Any  # multiprocessing RawArray('q')
    conn: Any  # write end of the child's pipe
    t0_wall: float
    spawn_time: float
    parent_pid: int
    incarnation: int
    seed_offset: int
    chunk_size: int
    eval_at_start: bool = False


# --------------------------------------------------------------------------- child processes

_CHILD_STATE = {"running": False, "stop": False}


def _child_sigterm(signum: int, frame: Any) -> None:
    del signum, frame
    _CHILD_STATE["stop"] = True
    if not _CHILD_STATE["running"]:
        raise SystemExit(0)  # still starting up: nothing to flush


def _child_setup() -> None:
    from launchpad_programs import workers

    if not workers.set_single_thread_flags():
        print("actorq child: jax was imported before the single-thread XLA flags were set",
              file=sys.stderr)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver coordinates Ctrl-C
    signal.signal(signal.SIGTERM, _child_sigterm)


def _child_main(spec: ChildSpec, body: Callable[[ChildSpec], None]) -> None:
    _child_setup()
    try:
        body(spec)
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 - report, then exit non-zero
        error = traceback.format_exc()
        print(f"actorq {spec.node} failed:\n{error}", file=sys.stderr)
        with contextlib.suppress(Exception):  # the driver may be gone
            spec.conn.send(("error", spec.node, {"traceback": error,
                                                  "incarnation": spec.incarnation}))
        sys.exit(1)
    finally:
        with contextlib.suppress(Exception):
            spec.conn.close()


def actor_process(spec: ChildSpec) -> None:
    """Entry point of an actor process."""
    _child_main(spec, _run_actor)


def evaluator_process(spec: ChildSpec) -> None:
    """Entry point of the evaluator process."""
    _child_main(spec, _run_evaluator)


def _run_actor(spec: ChildSpec) -> None:
    import numpy as np

    from launchpad_programs import nodes, workers
    from launchpad_programs.shared_policy import SharedPolicySource

    conn, node, config = spec.conn, spec.node, spec.config
    control = np.ctypeslib.as_array(spec.control)
    builder = nodes.make_builder_for(config)
    source = SharedPolicySource(spec.shm_names[nodes.actor_quantizers(config)[spec.index]])
    slot = SLOTS + spec.index
    worker = workers.ActorWorker(
        config, builder, spec.index, spec.num_actors, source,
        send_chunk=lambda chunk: conn.send(("experience", node, chunk)),
        seed_offset=spec.seed_offset,
        exploration_steps_done=int(control[slot]),
        chunk_size=spec.chunk_size,
    )
    slots = control[SLOTS:SLOTS + spec.num_actors]
    base, max_steps = int(control[BASE_STEPS]), int(config.max_actor_steps)

    def report(final: bool = False) -> None:
        conn.send(("report", node, {**worker.report(), "incarnation": spec.incarnation,
                                    "final": final, "pid": os.getpid()}))

    def stopping() -> bool:
        return bool(_CHILD_STATE["stop"] or control[STOP] != 0
                    or os.getppid() != spec.parent_pid)

    _CHILD_STATE["running"] = True
    last_report = time.perf_counter()
    while not stopping():
        steps = base + int(slots.sum())
        remaining = max_steps - steps
        if remaining <= 0:
            break
        if steps >= control[STEP_LIMIT]:  # the rate limiter: the learner is behind
            worker.wait_for_admission(
                lambda: base + int(slots.sum()) < control[STEP_LIMIT], stopping)
            continue
        taken, results = worker.step(max_transitions=remaining)
        control[slot] += taken
        if worker.calls == 1:
            # The breakdown so far (first pull, load, compilation) lets a reader separate
            # start-up from steady-state acting.
            conn.send(("ready", node, {"startup_s": worker.first_action_time - spec.spawn_time,
                                       "pid": os.getpid(), "incarnation": spec.incarnation,
                                       "first_step": worker.report()}))
        for result in results:
            conn.send(("episode", node, {
                "actor_steps": base + int(slots.sum()),
                "actor": spec.index,
                "learner_steps": int(control[LEARNER_STEPS]),
                "wall_time_s": time.time() - spec.t0_wall,
                "episode": 0,  # numbered by the driver
                "episode_return": result.episode_return,
                "episode_length": result.episode_length,
                "policy_version": worker.policy_version,
            }))
        if worker.calls % 16 == 0 and time.perf_counter() - last_report >= REPORT_EVERY_S:
            last_report = time.perf_counter()
            report()
            if os.getppid() != spec.parent_pid:
                return  # orphaned: the driver died
    if os.getppid() != spec.parent_pid:
        return
    worker.close()
    report(final=True)


def _run_evaluator(spec: ChildSpec) -> None:
    import numpy as np

    from launchpad_programs import nodes, workers
    from launchpad_programs.shared_policy import SharedPolicySource

    conn, config = spec.conn, spec.config
    control = np.ctypeslib.as_array(spec.control)
    slots = control[SLOTS:SLOTS + spec.num_actors]
    base, max_steps = int(control[BASE_STEPS]), int(config.max_actor_steps)
    every = int(config.eval_every_steps)
    builder = nodes.make_builder_for(config)
    evaluator = nodes.DualEvaluator(config, builder)
    source = SharedPolicySource(spec.shm_names[str(config.quantizer)])
    fp32_source = (SharedPolicySource(spec.shm_names["fp32"])
                   if nodes.evaluates_fp32(config) else None)

    def total() -> int:
        return base + int(slots.sum())

    next_eval = 0 if spec.eval_at_start else (total() // every + 1) * every
    # The evaluator has nothing to flush: SIGTERM (sent by the driver on stop) exits at once,
    # abandoning an evaluation in progress.
    ready_sent = False
    while not _CHILD_STATE["stop"] and control[STOP] == 0:
        steps = total()
        if next_eval < max_steps and steps >= next_eval:
            # The row describes the moment the evaluated package was taken.
            learner_steps, wall = int(control[LEARNER_STEPS]), time.time() - spec.t0_wall
            evaluation = evaluator.run(source, fp32_source)
            conn.send(("eval", spec.node, workers.eval_row(steps, learner_steps, wall,
                                                           evaluation)))
            next_eval = (total() // every + 1) * every
        else:
            time.sleep(0.05)
            if os.getppid() != spec.parent_pid:
                return
        if not ready_sent:
            ready_sent = True
            conn.send(("ready", spec.node, {"startup_s": time.time() - spec.spawn_time,
                                            "pid": os.getpid(),
                                            "incarnation": spec.incarnation}))


# ---------------------------------------------------------------------------- the driver side


@dataclasses.dataclass
class _Child:
    node: str
    index: int
    process: Any
    incarnation: int
    ready: bool = False
    finished: bool = False
    startup_failures: int = 0


class LocalTransport:
    """Runs the actors and the evaluator as local processes (see the module docstring)."""

    name = "local"

    def __init__(self) -> None:
        self._mp = multiprocessing.get_context("spawn")
        self._children: dict[str, _Child] = {}
        self._conns: dict[Any, tuple[str, int]] = {}
        self._conns_lock = threading.Lock()
        self._publishers: dict[str, Any] = {}
        self._control = None
        self._ctx: LaunchContext | None = None
        self._receiver: threading.Thread | None = None
        self._stopping = False
        self._receiver_stop = threading.Event()
        self._base = 0
        self._num_actors = 0
        self._closed = False

    # ---------------------------------------------------------------------------- start

    def start(self, ctx: LaunchContext, on_message: Callable[[Message], None]) -> None:
        import numpy as np

        from launchpad_programs.shared_policy import SharedPolicyPublisher

        self._ctx = ctx
        self._on_message = on_message
        self._num_actors = ctx.program.num_actors
        self._base = ctx.base_actor_steps
        version, data = ctx.first_package
        self._publishers = {precision: SharedPolicyPublisher.for_package(package)
                            for precision, package in data.items()}
        self.publish(version, data)
        self._control = self._mp.RawArray("q", SLOTS + self._num_actors)
        control = np.ctypeslib.as_array(self._control)
        control[LEARNER_STEPS] = version
        control[STEP_LIMIT] = ctx.step_limit
        # Per-actor counters continue from the checkpoint (so a resumed actor's exploration
        # schedule continues); the base makes base + sum(counters) the global step count.
        control[SLOTS:] = ctx.actor_steps
        control[BASE_STEPS] = self._base - sum(ctx.actor_steps)
        self._view = control
        self._receiver = threading.Thread(target=self._receive, name="actorq-receiver",
                                          daemon=True)
        self._receiver.start()
        for i in range(self._num_actors):
            self._spawn(f"actor_{i}", i, incarnation=0, seed_offset=self._base)
        self._spawn("evaluator", -1, incarnation=0, seed_offset=0)

    def _spawn(self, node: str, index: int, incarnation: int, seed_offset: int) -> None:
        assert self._ctx is not None and self._publishers
        reader, writer = self._mp.Pipe(duplex=False)
        spec = ChildSpec(
            node=node, index=index, num_actors=self._num_actors, config=self._ctx.config,
            shm_names={p: publisher.name for p, publisher in self._publishers.items()},
            control=self._control, conn=writer,
            t0_wall=self._ctx.t0_wall, spawn_time=time.time(), parent_pid=os.getpid(),
            incarnation=incarnation, seed_offset=seed_offset,
            chunk_size=self._ctx.program.chunk_size,
            eval_at_start=self._ctx.eval_at_start and incarnation == 0,
        )
        target = evaluator_process if node == "evaluator" else actor_process
        process = self._mp.Process(target=target, args=(spec,), name=f"actorq-{node}",
                                   daemon=True)
        with workers.single_thread_child_environment():
            process.start()
        writer.close()  # the child holds the only write end: its death means EOF here
        previous = self._children.get(node)
        child = _Child(node, index, process, incarnation)
        if previous is not None:
            child.startup_failures = 0 if previous.ready else previous.startup_failures + 1
        self._children[node] = child
        with self._conns_lock:
            self._conns[reader] = (node, incarnation)

    # ------------------------------------------------------------------------- receiving

    def _receive(self) -> None:
        wait = multiprocessing.connection.wait
        hard_deadline: float | None = None
        while True:
            with self._conns_lock:
                conns = list(self._conns)
            if self._receiver_stop.is_set():
                if not conns:
                    return
                if hard_deadline is None:
                    hard_deadline = time.monotonic() + 5.0
                elif time.monotonic() > hard_deadline:
                    return
            if not conns:
                time.sleep(0.02)
                continue
            for conn in wait(conns, timeout=0.1):
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    with self._conns_lock:
                        self._conns.pop(conn, None)
                    conn.close()
                    continue
                if message[0] == "ready":
                    child = self._children.get(message[1])
                    if child is not None and child.incarnation == message[2].get("incarnation"):
                        child.ready = True
                self._on_message(message)

    # ------------------------------------------------------------------------ driver API

    def publish(self, version: int, data: bytes) -> None:
        for precision, package in data.items():
            self._publishers[precision].publish(version, package)

    def global_actor_steps(self) -> int:
        if self._control is None:
            return self._base
        control = self._view
        return int(control[BASE_STEPS]) + int(control[SLOTS:].sum())

    def actor_steps(self) -> list[int]:
        if self._control is None:
            return [0] * self._num_actors
        return [int(v) for v in self._view[SLOTS:]]

    def set_learner_steps(self, steps: int) -> None:
        if self._control is not None:
            self._view[LEARNER_STEPS] = steps

    def set_step_limit(self, limit: int) -> None:
        if self._control is not None:
            self._view[STEP_LIMIT] = limit

    def supervise(self) -> list[dict[str, Any]]:
        events = []
        if self._stopping or self._ctx is None:
            return events
        budget_done = self.global_actor_steps() >= int(self._ctx.config.max_actor_steps)
        for node, child in list(self._children.items()):
            if child.finished or child.process.is_alive():
                continue
            exitcode = child.process.exitcode
            child.process.join(0.1)
            if node != "evaluator" and (exitcode == 0 or budget_done):
                child.finished = True
                continue
            if node == "evaluator" and budget_done:
                child.finished = True
                continue
            failures = child.startup_failures + (0 if child.ready else 1)
            if failures >= MAX_STARTUP_FAILURES:
                raise RuntimeError(
                    f"{node} died {failures} times before acting (last exit code {exitcode}); "
                    "see its error above"
                )
            seed_offset = self.global_actor_steps() + 101 * (child.incarnation + 1)
            self._spawn(node, child.index, child.incarnation + 1, seed_offset)
            events.append({"event": "restart", "node": node, "exitcode": exitcode,
                           "incarnation": child.incarnation + 1,
                           "pid": self._children[node].process.pid,
                           "actor_steps": self.global_actor_steps()})
        return events

    def actors_finished(self) -> bool:
        actors = [c for n, c in self._children.items() if n != "evaluator"]
        return bool(actors) and all(c.finished for c in actors)

    def shutdown(self, timeout: float) -> None:
        self._stopping = True
        if self._control is not None:
            self._view[STOP] = 1
        processes = [c.process for c in self._children.values()]
        evaluator = self._children.get("evaluator")
        if evaluator is not None and evaluator.process.is_alive():
            evaluator.process.terminate()  # an evaluation in progress is abandoned
        deadline = time.monotonic() + timeout
        while any(p.is_alive() for p in processes) and time.monotonic() < deadline:
            time.sleep(0.05)
        stragglers = [p for p in processes if p.is_alive()]
        for p in stragglers:
            logging.warning("terminating %s (pid %s)", p.name, p.pid)
            p.terminate()
        deadline = time.monotonic() + 2.0
        while any(p.is_alive() for p in stragglers) and time.monotonic() < deadline:
            time.sleep(0.05)
        for p in stragglers:
            if p.is_alive():
                logging.warning("killing %s (pid %s)", p.name, p.pid)
                p.kill()
            p.join(1.0)
        for p in processes:
            p.join(0.1)
        self._receiver_stop.set()
        if self._receiver is not None:
            self._receiver.join(10.0)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for child in self._children.values():
            if child.process.is_alive():
                child.process.kill()
                child.process.join(1.0)
        with self._conns_lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()
        for publisher in self._publishers.values():
            publisher.close()

    def pids(self) -> dict[str, int]:
        pids = {"learner": os.getpid()}
        for node, child in self._children.items():
            pids[node] = child.process.pid
        return pids

    @property
    def shm_names(self) -> dict[str, str]:
        """The weights channel's shared-memory segment per precision."""
        return {p: publisher.name for p, publisher in self._publishers.items()}
