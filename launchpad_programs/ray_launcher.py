"""The Ray launcher: the same program with its nodes as Ray actors.

    python -m experiments.dqn_actorq --config=configs/dqn_actorq.py:cartpole_small \
        --config.launcher=ray --config.num_actors=2 [--config.ray_address=HOST:PORT]

Without ``ray_address`` it starts a local Ray instance bound to this machine (or reuses one
already initialised in this process, e.g. by a test) and shuts it down at the end only if it
started it. With an address it joins that cluster.

Placement (Launchpad's controller pattern): the **driver** (this process, e.g. a GPU head node)
hosts ``learner`` + ``replay`` (``driver.py``); Ray actors host ``actor_i`` (single-threaded
XLA via ``runtime_env``), the ``evaluator`` and ``counter`` (a tiny actor holding the global
step budget, the stop flag and the newest package's ObjectRef).

Channels:

* **weights**: the driver ``ray.put``\\ s each published package once (plain bytes, no JAX arrays)
  and registers its ObjectRef with ``counter``; an actor pulling asks ``counter`` for a version
  newer than its own and, if there is one, ``ray.get``\\ s the bytes (timed as ``pull``);
* **experience**: each actor buffers numpy chunks; the driver keeps one ``drain()`` call in flight
  per actor, which returns every chunk, episode and runtime report gathered since the previous
  one in one reply, so per-call overhead stays off the actors' hot path;
* **control**: actors claim their steps from ``counter`` in blocks (``CLAIM_BLOCK``), so the
  global budget holds exactly (unused claims are returned on a clean stop; a killed actor's
  unused claim is counted as spent). Claims also stop at the rate limiter's step limit, which
  the driver sets on ``counter``: an actor refused for that reason flushes its experience and
  asks again after a short wait (its ``blocked`` time).

A dead actor (its ``drain`` raises ``RayActorError``) is restarted with the same index and a fresh
seed and recorded in ``actor_restarts``. Ray is an optional extra: importing this module does not
import ray, and a missing ray raises an error telling how to install it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from absl import logging

from launchpad_programs.driver import LaunchContext, Message
from launchpad_programs.workers import SINGLE_THREAD_ENV

CLAIM_BLOCK = 100
DRAIN_WAIT_S = 0.2


def import_ray() -> Any:
    """``import ray``, or an ImportError saying how to install it."""
    try:
        import ray
    except ImportError as error:
        raise ImportError(
            "config.launcher='ray' needs Ray, an optional extra: pip install -e \".[ray]\" "
            "(or pip install 'ray>=2.40')"
        ) from error
    return ray


# --------------------------------------------------------------------------------- Ray actors
# Plain classes, wrapped with ray.remote() at launch, so importing this module needs no Ray.


class ControlNode:
    """The ``counter`` node: step budget, stop flag, learner steps, newest package ref."""

    def __init__(self, base_steps: int, max_steps: int, actor_steps: list[int],
                 step_limit: int) -> None:
        self._claimed = int(base_steps)
        self._limit = int(step_limit)
        self._max = int(max_steps)
        self._own = [int(s) for s in actor_steps]
        self._stop = False
        self._learner_steps = 0
        self._policy: tuple[int, dict[str, list[Any]]] | None = None

    def claim(self, index: int, n: int) -> tuple[int, int, int, bool]:
        """Grants up to ``n`` steps to actor ``index``: (granted, global claimed, learner
        steps, paced). 0 granted once the budget is spent or a stop was requested
        (``paced=False``: stop for good), or while the rate limiter's step limit is reached
        (``paced=True``: ask again later)."""
        if self._stop or self._claimed >= self._max:
            return 0, self._claimed, self._learner_steps, False
        granted = max(0, min(int(n), self._max - self._claimed, self._limit - self._claimed))
        self._claimed += granted
        self._own[index] += granted
        return granted, self._claimed, self._learner_steps, granted == 0

    def set_step_limit(self, limit: int) -> None:
        self._limit = int(limit)

    def release(self, index: int, n: int) -> None:
        """Returns ``n`` claimed but untaken steps."""
        self._claimed -= int(n)
        self._own[index] -= int(n)

    def status(self) -> dict[str, Any]:
        return {"total": self._claimed, "own": list(self._own), "stop": self._stop}

    def stop(self) -> None:
        self._stop = True

    def set_learner_steps(self, steps: int) -> None:
        self._learner_steps = int(steps)

    def publish(self, version: int, refs: dict[str, list[Any]]) -> None:
        """Registers the newest version: per precision, a one-element list holding its
        package's ObjectRef (so Ray passes the reference instead of resolving it)."""
        if self._policy is None or version > self._policy[0]:
            self._policy = (int(version), refs)

    def latest(self, newer_than: int, precision: str) -> tuple[int, list[Any]] | None:
        if self._policy is None or self._policy[0] <= newer_than:
            return None
        return self._policy[0], self._policy[1][precision]


class RayPolicySource:
    """``VariableSource`` over the counter's package registry and the object store."""

    def __init__(self, control: Any, precision: str) -> None:
        self._control = control
        self._precision = precision
        self._cached: tuple[int, bytes] | None = None

    def latest(self) -> tuple[int, bytes] | None:
        ray = import_ray()
        current = -1 if self._cached is None else self._cached[0]
        newer = ray.get(self._control.latest.remote(current, self._precision))
        if newer is not None:
            version, (ref,) = newer
            self._cached = (version, ray.get(ref))
        return self._cached


class ActorNode:
    """``actor_i``: steps its environment on a background thread; ``drain()`` hands the
    gathered experience, episodes and reports to the driver."""

    def __init__(self, config: Any, index: int, num_actors: int, control: Any,
                 seed_offset: int, exploration_steps_done: int, incarnation: int,
                 t0_wall: float, spawn_time: float, chunk_size: int) -> None:
        self._args = (config, index, num_actors, control, seed_offset, exploration_steps_done,
                      incarnation, t0_wall, spawn_time, chunk_size)
        self._node = f"actor_{index}"
        self._lock = threading.Condition()
        self._chunks: list[dict[str, Any]] = []
        self._pending_items = 0
        self._messages: list[Message] = []
        self._stop = threading.Event()
        self._finished = False
        self._thread = threading.Thread(target=self._run, name=self._node, daemon=True)
        self._thread.start()

    def pid(self) -> int:
        return os.getpid()

    def stop(self) -> None:
        self._stop.set()

    def drain(self, wait_s: float = DRAIN_WAIT_S) -> dict[str, Any]:
        """Everything gathered since the last call (waits up to ``wait_s`` for a chunk)."""
        import numpy as np

        with self._lock:
            if not self._chunks and not self._finished:
                self._lock.wait(wait_s)
            chunks, self._chunks = self._chunks, []
            messages, self._messages = self._messages, []
            finished = self._finished
        experience = None
        if chunks:
            experience = {field: np.concatenate([c[field] for c in chunks])
                          for field in chunks[0]}
        return {"experience": experience, "messages": messages, "finished": finished}

    def _send(self, message: Message, notify: bool = False) -> None:
        with self._lock:
            self._messages.append(message)
            if notify:
                self._lock.notify_all()

    def _add_chunk(self, chunk: dict[str, Any]) -> None:
        copy = {field: array.copy() for field, array in chunk.items()}  # buffers are reused
        with self._lock:
            self._chunks.append(copy)
            self._lock.notify_all()

    def _run(self) -> None:
        (config, index, num_actors, control, seed_offset, exploration_steps_done,
         incarnation, t0_wall, spawn_time, chunk_size) = self._args
        node = self._node
        try:
            ray = import_ray()
            from launchpad_programs import nodes, workers

            builder = nodes.make_builder_for(config)
            precision = nodes.actor_quantizers(config)[index]
            worker = workers.ActorWorker(
                config, builder, index, num_actors, RayPolicySource(control, precision),
                self._add_chunk,
                seed_offset=seed_offset, exploration_steps_done=exploration_steps_done,
                chunk_size=chunk_size,
            )
            granted, claimed, learner_steps = 0, 0, 0
            last_report = time.perf_counter()
            admitted = {"granted": 0}

            def claim_admitted() -> bool:
                nonlocal claimed, learner_steps
                granted_now, claimed, learner_steps, paced = ray.get(
                    control.claim.remote(index, CLAIM_BLOCK))
                admitted["granted"] = granted_now
                admitted["final"] = not paced and granted_now == 0
                return granted_now > 0 or admitted["final"]

            def report(final: bool = False) -> None:
                self._send(("report", node, {**worker.report(), "incarnation": incarnation,
                                             "final": final, "pid": os.getpid()}))

            while not self._stop.is_set():
                if granted == 0:
                    granted, claimed, learner_steps, paced = ray.get(
                        control.claim.remote(index, CLAIM_BLOCK))
                    if granted == 0 and paced:  # the rate limiter: the learner is behind
                        worker.wait_for_admission(claim_admitted, self._stop.is_set,
                                                  max_poll_s=0.02)
                        granted = admitted["granted"]
                        if granted == 0 and not admitted.get("final"):
                            continue  # stopping: the loop condition ends it
                    if granted == 0:
                        break
                taken, results = worker.step(max_transitions=granted)
                granted -= taken
                if worker.calls == 1:
                    self._send(("ready", node, {
                        "startup_s": worker.first_action_time - spawn_time,
                        "pid": os.getpid(), "incarnation": incarnation,
                        "first_step": worker.report()}))
                for result in results:
                    self._send(("episode", node, {
                        "actor_steps": claimed - granted,
                        "actor": index,
                        "learner_steps": learner_steps,
                        "wall_time_s": time.time() - t0_wall,
                        "episode": 0,
                        "episode_return": result.episode_return,
                        "episode_length": result.episode_length,
                        "policy_version": worker.policy_version,
                    }))
                if worker.calls % 16 == 0 and time.perf_counter() - last_report >= 1.0:
                    last_report = time.perf_counter()
                    report()
            if granted:
                control.release.remote(index, granted)
            worker.close()
            report(final=True)
        except Exception:  # noqa: BLE001 - reported to the driver
            self._send(("error", node, {"traceback": traceback.format_exc(),
                                        "incarnation": incarnation}))
        finally:
            with self._lock:
                self._finished = True
                self._lock.notify_all()


class EvaluatorNode:
    """The ``evaluator``: noise-free episodes of the newest package, on request."""

    def __init__(self, config: Any, control: Any) -> None:
        self._config = config
        self._control = control
        self._evaluator = None
        self._sources: tuple[Any, Any] | None = None

    def pid(self) -> int:
        return os.getpid()

    def run(self, actor_steps: int, learner_steps: int, wall_time_s: float) -> dict[str, Any]:
        from launchpad_programs import nodes, workers

        if self._evaluator is None:
            builder = nodes.make_builder_for(self._config)
            self._evaluator = nodes.DualEvaluator(self._config, builder)
            fp32 = (RayPolicySource(self._control, "fp32")
                    if nodes.evaluates_fp32(self._config) else None)
            self._sources = (RayPolicySource(self._control, str(self._config.quantizer)), fp32)
        evaluation = self._evaluator.run(*self._sources)
        return workers.eval_row(actor_steps, learner_steps, wall_time_s, evaluation)


# ---------------------------------------------------------------------------- the driver side


class RayTransport:
    """Runs the actors, the evaluator and the counter as Ray actors (module docstring)."""

    name = "ray"

    def __init__(self, config: Any) -> None:
        self._ray = import_ray()
        self._config = config
        self._started_ray = False
        # Connect before the driver starts JAX (ray.init forks helper processes).
        self._connect(config)
        self._ctx: LaunchContext | None = None
        self._control = None
        self._actors: dict[int, dict[str, Any]] = {}
        self._evaluator = None
        self._eval_ref = None
        self._eval_restarts_pending = False
        self._lock = threading.Lock()
        self._receiver: threading.Thread | None = None
        self._receiver_stop = threading.Event()
        self._stopping = False
        self._total = 0
        self._own: list[int] = []
        self._learner_steps = 0
        self._latest_refs: dict[str, Any] | None = None
        self._pids: dict[str, int] = {"learner": os.getpid()}
        self._closed = False

    # ---------------------------------------------------------------------------- start

    def start(self, ctx: LaunchContext, on_message: Callable[[Message], None]) -> None:
        ray = self._ray
        self._ctx, self._on_message = ctx, on_message
        config = ctx.config
        num_actors = ctx.program.num_actors
        self._connect(config)
        total_cpus = float(ray.cluster_resources().get("CPU", 1.0))
        self._cpus = max(0.01, min(1.0, int(100 * total_cpus / (num_actors + 1)) / 100))
        self._runtime_env = {"env_vars": dict(SINGLE_THREAD_ENV)}
        self._total = ctx.base_actor_steps
        self._own = list(ctx.actor_steps)
        self._step_limit = int(ctx.step_limit)
        self._control = ray.remote(ControlNode).options(num_cpus=0).remote(
            ctx.base_actor_steps, int(config.max_actor_steps), list(ctx.actor_steps),
            self._step_limit)
        self.publish(*ctx.first_package)
        for i in range(num_actors):
            self._spawn_actor(i, incarnation=0, seed_offset=ctx.base_actor_steps)
        self._evaluator = self._make_evaluator()
        every = int(config.eval_every_steps)
        self._next_eval = 0 if ctx.eval_at_start else (ctx.base_actor_steps // every + 1) * every
        self._receiver = threading.Thread(target=self._receive, name="actorq-ray-receiver",
                                          daemon=True)
        self._receiver.start()

    def _connect(self, config: Any) -> None:
        """Joins the Ray instance of this process, ``config.ray_address``, or starts a local
        one bound to this machine."""
        ray = self._ray
        if ray.is_initialized():
            return
        previous = signal.getsignal(signal.SIGTERM)
        address = config.get("ray_address", "") or None
        kwargs: dict[str, Any] = {"include_dashboard": False}
        if address is None:
            kwargs["num_cpus"] = max(os.cpu_count() or 1, int(config.num_actors) + 1)
        ray.init(address=address, **kwargs)
        self._started_ray = True
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)  # ray.init installs its own handler

    def _make_evaluator(self) -> Any:
        return self._ray.remote(EvaluatorNode).options(
            num_cpus=self._cpus, runtime_env=self._runtime_env,
        ).remote(self._ctx.config, self._control)

    def _spawn_actor(self, index: int, incarnation: int, seed_offset: int) -> None:
        ctx = self._ctx
        handle = self._ray.remote(ActorNode).options(
            num_cpus=self._cpus, max_concurrency=4, runtime_env=self._runtime_env,
        ).remote(ctx.config, index, ctx.program.num_actors, self._control, seed_offset,
                 self._own[index], incarnation, ctx.t0_wall, time.time(), ctx.program.chunk_size)
        with self._lock:
            self._actors[index] = {"handle": handle, "ref": handle.drain.remote(),
                                   "incarnation": incarnation, "finished": False,
                                   "dead": False, "exitcode": None, "ready": False,
                                   "startup_failures": self._actors.get(index, {}).get(
                                       "startup_failures", 0)}

    # ------------------------------------------------------------------------- receiving

    def _receive(self) -> None:
        ray = self._ray
        last_status = 0.0
        config = self._ctx.config
        every, max_steps = int(config.eval_every_steps), int(config.max_actor_steps)
        while not self._receiver_stop.is_set():
            now = time.monotonic()
            if now - last_status >= 0.1:
                last_status = now
                try:
                    status = ray.get(self._control.status.remote(), timeout=5.0)
                    self._total, self._own = status["total"], status["own"]
                except Exception:  # noqa: BLE001 - keep the last known values
                    pass
                if (self._eval_ref is None and not self._stopping and self._next_eval < max_steps
                        and self._total >= self._next_eval and self._evaluator is not None):
                    self._eval_ref = self._evaluator.run.remote(
                        self._total, self._learner_steps, time.time() - self._ctx.t0_wall)
                    self._next_eval = (self._total // every + 1) * every
            with self._lock:
                pending = {a["ref"]: i for i, a in self._actors.items()
                           if a["ref"] is not None}
            refs = list(pending)
            if self._eval_ref is not None:
                refs.append(self._eval_ref)
            if not refs:
                time.sleep(0.05)
                continue
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0.05)
            for ref in ready:
                if ref in pending:
                    self._handle_drain(pending[ref], ref)
                else:
                    self._handle_eval(ref)

    def _handle_drain(self, index: int, ref: Any) -> None:
        ray = self._ray
        with self._lock:
            actor = self._actors[index]
            if actor["ref"] is not ref:
                return
        try:
            out = ray.get(ref)
        except ray.exceptions.RayActorError as error:
            with self._lock:
                actor["ref"], actor["dead"] = None, True
                actor["exitcode"] = type(error).__name__
            return
        if out["experience"] is not None:
            self._on_message(("experience", f"actor_{index}", out["experience"]))
        for message in out["messages"]:
            if message[0] == "ready":
                actor["ready"] = True
                self._pids[message[1]] = int(message[2]["pid"])
            if message[0] == "error":
                actor["exitcode"] = "error"
            self._on_message(message)
        with self._lock:
            if out["finished"]:
                actor["ref"] = None
                if actor["exitcode"] == "error":
                    actor["dead"] = True
                else:
                    actor["finished"] = True
            else:
                actor["ref"] = actor["handle"].drain.remote()

    def _handle_eval(self, ref: Any) -> None:
        ray = self._ray
        self._eval_ref = None
        try:
            row = ray.get(ref)
        except ray.exceptions.RayActorError:
            self._eval_restarts_pending = True
            return
        except Exception:  # noqa: BLE001
            logging.exception("evaluation failed")
            return
        self._on_message(("eval", "evaluator", row))

    # ------------------------------------------------------------------------ driver API

    def publish(self, version: int, packages: dict[str, bytes]) -> None:
        # One object per package and version; actors fetch it from the object store.
        refs = {precision: self._ray.put(data) for precision, data in packages.items()}
        self._control.publish.remote(version, {p: [ref] for p, ref in refs.items()})
        self._latest_refs = refs  # the driver owns the objects: keep them alive

    def global_actor_steps(self) -> int:
        return int(self._total)

    def actor_steps(self) -> list[int]:
        return list(self._own)

    def set_learner_steps(self, steps: int) -> None:
        if steps - self._learner_steps >= 64 or steps < self._learner_steps:
            self._control.set_learner_steps.remote(steps)
        self._learner_steps = steps

    def set_step_limit(self, limit: int) -> None:
        # One actor call per change; the limit moves only when the learner samples.
        if self._control is not None and limit != self._step_limit:
            self._step_limit = int(limit)
            self._control.set_step_limit.remote(self._step_limit)

    def supervise(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        if self._stopping or self._ctx is None:
            return events
        budget_done = self._total >= int(self._ctx.config.max_actor_steps)
        with self._lock:
            dead = [(i, dict(a)) for i, a in self._actors.items()
                    if a["dead"] and not a["finished"]]
        for index, actor in dead:
            self._kill(actor["handle"])
            if budget_done:
                with self._lock:
                    self._actors[index]["finished"] = True
                continue
            failures = actor["startup_failures"] + (0 if actor["ready"] else 1)
            if failures >= 3:
                raise RuntimeError(f"actor_{index} died {failures} times before acting")
            incarnation = actor["incarnation"] + 1
            self._spawn_actor(index, incarnation, self._total + 101 * incarnation)
            with self._lock:
                self._actors[index]["startup_failures"] = failures if not actor["ready"] else 0
            events.append({"event": "restart", "node": f"actor_{index}",
                           "exitcode": actor["exitcode"], "incarnation": incarnation,
                           "actor_steps": self._total})
        if self._eval_restarts_pending:
            self._eval_restarts_pending = False
            self._kill(self._evaluator)
            self._evaluator = self._make_evaluator()
            events.append({"event": "restart", "node": "evaluator", "exitcode": "died",
                           "actor_steps": self._total})
        return events

    def actors_finished(self) -> bool:
        with self._lock:
            return bool(self._actors) and all(a["finished"] for a in self._actors.values())

    def shutdown(self, timeout: float) -> None:
        ray = self._ray
        self._stopping = True
        if self._control is None:
            return
        try:
            self._control.stop.remote()
            with self._lock:
                handles = [a["handle"] for a in self._actors.values()]
            for handle in handles:
                handle.stop.remote()
        except Exception:  # noqa: BLE001
            logging.exception("could not signal the Ray actors to stop")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                busy = [a for a in self._actors.values()
                        if a["ref"] is not None and not a["finished"] and not a["dead"]]
            if not busy or self._receiver is None or not self._receiver.is_alive():
                break
            time.sleep(0.05)
        self._receiver_stop.set()
        if self._receiver is not None:
            self._receiver.join(5.0)
        try:
            status = ray.get(self._control.status.remote(), timeout=5.0)
            self._total, self._own = status["total"], status["own"]
        except Exception:  # noqa: BLE001
            pass
        with self._lock:
            handles = [a["handle"] for a in self._actors.values()]
        for handle in [*handles, self._evaluator, self._control]:
            self._kill(handle)

    def _kill(self, handle: Any) -> None:
        if handle is None:
            return
        with contextlib.suppress(Exception):  # already gone
            self._ray.kill(handle, no_restart=True)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._latest_refs = None
        if self._started_ray:
            self._ray.shutdown()

    def pids(self) -> dict[str, int]:
        return dict(self._pids)
