"""The learner side of a distributed run, shared by the local and Ray launchers.

The driver process hosts the ``learner``, ``replay`` and ``counter`` nodes: it trains, publishes
quantized packages on the weights channel, inserts experience chunks into the replay table,
logs everything, saves checkpoints and supervises the other nodes through a :class:`Transport`
(local processes + shared memory, or Ray actors + the object store).

Pacing: the replay table's rate limiter (``pacing.py``) is the one rule. Experience enters the
table through an admission queue at the pace the limiter admits; the learner steps when the table
lets it sample a whole call's batch; actors get the limiter's admission as a global step limit
through the transport's control channel and wait at it.

Publishing: ``publish_period > 0`` publishes every that many learner steps; ``0`` (default)
publishes whenever the package is stale, but only if at least 9x the last publish's cost has
passed since it, so quantizing (tens of ms for the paper policy) takes at most ~10% of the
learner's time.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import ml_collections
from absl import logging

from launchpad_programs.program import Program
from launchpad_programs.run_directory import RunDirectory

# Message kinds on the control/experience channels (node -> driver):
#   ("experience", node, {field: array[n, ...]})
#   ("episode", node, row)        ("eval", "evaluator", row)
#   ("report", node, {"breakdown", "steps", "policy_version", "num_pulls", ...})
#   ("ready", node, {"startup_s", "pid", ...})        ("error", node, {"traceback"})
Message = tuple[str, str, Any]


class StopRequested(Exception):
    """Raised by the SIGTERM handler to unwind like Ctrl-C."""


class _BudgetSpent(Exception):
    """A resumed run that has nothing left to do (only the final evaluation)."""


@dataclasses.dataclass
class LaunchContext:
    """What a transport needs to start the nodes."""

    config: ml_collections.ConfigDict
    program: Program
    run_dir: Path
    base_actor_steps: int
    actor_steps: list[int]  # steps each actor index already took (resume)
    actor_episodes: list[int]
    t0_wall: float  # time.time() - resumed wall time: rows use time.time() - t0_wall
    first_package: tuple[int, dict[str, bytes]]  # version, package bytes per precision
    eval_at_start: bool
    step_limit: int  # global actor steps the rate limiter allows at start


class Transport(Protocol):
    """How the driver reaches the other nodes (implemented per launcher)."""

    name: str

    def start(self, ctx: LaunchContext, on_message: Callable[[Message], None]) -> None:
        """Creates the channels and starts every actor and the evaluator."""

    def publish(self, version: int, packages: dict[str, bytes]) -> None:
        """Puts a new version on the weights channel: one package per precision in use."""

    def global_actor_steps(self) -> int:
        """Actor steps taken by all actors, all incarnations, resumed base included."""

    def actor_steps(self) -> list[int]:
        """Steps per actor index (for checkpoints)."""

    def set_learner_steps(self, steps: int) -> None:
        """Shares the learner's step count with the nodes (eval/episode rows)."""

    def set_step_limit(self, limit: int) -> None:
        """Shares the global actor-step limit of the rate limiter; actors wait at it."""

    def supervise(self) -> list[dict[str, Any]]:
        """Restarts dead nodes; returns one event dict per restart."""

    def actors_finished(self) -> bool:
        """Whether every actor has stopped for good (budget reached or stop requested)."""

    def shutdown(self, timeout: float) -> None:
        """Stops every node (stop signal, then terminate/kill stragglers) and delivers their
        last messages; ``on_message`` is not called after it returns."""

    def close(self) -> None:
        """Releases the channels (shared memory, Ray); idempotent."""

    def pids(self) -> dict[str, int]:
        """Process ids per node name."""


class Driver:
    """Runs the learner/replay/counter side of ``program`` over ``transport``."""

    def __init__(self, config: ml_collections.ConfigDict, run_dir: RunDirectory, resume: bool,
                 program: Program, builder: Any, transport: Transport) -> None:
        self.config = config
        self.run_dir = run_dir
        self.resume = resume
        self.program = program
        self.builder = builder
        self.transport = transport
        self._lock = threading.Lock()
        self._pids_lock = threading.Lock()
        self._inserted = threading.Event()
        self._reports: dict[str, dict[int, dict[str, Any]]] = {}
        self._startup: dict[str, list[float]] = {}
        self._last_eval = float("nan")
        self._errors: list[str] = []
        self._learner_steps = 0
        self._published_version = -1

    # ------------------------------------------------------------------ messages (any thread)

    def _on_message(self, message: Message) -> None:
        kind, node, payload = message
        try:
            if kind == "experience":
                self._admission.put(payload)
                index = int(node.rsplit("_", 1)[1])
                with self._lock:
                    self._received[index] += len(next(iter(payload.values())))
                self._inserted.set()
            elif kind == "episode":
                payload.setdefault("learner_steps", self._learner_steps)
                payload.setdefault("wall_time_s", time.time() - self._t0_wall)
                index = int(node.rsplit("_", 1)[1])
                with self._lock:
                    self._counters["episodes"] += 1
                    self._counters["actor_episodes"][index] += 1
                    # Numbered by the driver so restarted actors continue the sequence.
                    payload["episode"] = self._counters["actor_episodes"][index]
                self._actor_logs[node].write(payload)
            elif kind == "report":
                incarnation = int(payload.get("incarnation", 0))
                with self._lock:
                    self._reports.setdefault(node, {})[incarnation] = payload
            elif kind == "eval":
                payload.setdefault("learner_steps", self._learner_steps)
                self._eval_log.write(payload)
                self._last_eval = float(payload["eval_return"])
            elif kind == "ready":
                incarnation = int(payload.get("incarnation", 0))
                with self._lock:
                    self._startup.setdefault(node, []).append(float(payload["startup_s"]))
                    if "first_step" in payload:  # counts even if the node dies before reporting
                        self._reports.setdefault(node, {}).setdefault(
                            incarnation, {**payload["first_step"], "incarnation": incarnation})
                self._write_pids()  # Ray learns a node's pid only now
                self._event({"event": "ready", "node": node,
                                    **{k: v for k, v in payload.items()
                                       if isinstance(v, int | float | str)}})
            elif kind == "error":
                logging.error("%s failed:\n%s", node, payload.get("traceback", payload))
                with self._lock:
                    self._errors.append(f"{node}: {payload.get('traceback', payload)}")
                self._event({"event": "error", "node": node,
                                    "error": str(payload.get("traceback", payload))[-2000:]})
            else:
                logging.warning("unknown message kind %r from %s", kind, node)
        except Exception:  # noqa: BLE001 - a bad message must not kill the receiver
            logging.exception("failed to handle %r message from %s", kind, node)

    # ------------------------------------------------------------------------------- run

    def run(self) -> dict[str, Any]:
        from actorq.checkpointing import Checkpointer
        from actorq.metrics.carbon import CarbonTracker
        from actorq.metrics.loggers import JSONLLogger
        from actorq.metrics.progress import Progress
        from actorq.replay import AdmissionQueue
        from launchpad_programs import nodes
        from launchpad_programs.pacing import ActorPacing

        config, builder, run_dir = self.config, self.builder, self.run_dir
        table = nodes.make_table(config, builder)
        learner_cfg = builder.config
        batch_items = learner_cfg.batch_size * learner_cfg.sgd_steps_per_call
        warmup = _WarmupTable(table)
        learner = nodes.make_learner(config, builder, warmup, sample_timeout=5.0)
        packages = nodes.LearnerPackages(learner, builder, nodes.published_precisions(config))
        drift = nodes.DriftMonitor(builder, table, int(config.replay.min_size), config.seed)
        drift_row: dict[str, float] = {}
        checkpointer = Checkpointer(run_dir.checkpoints)
        num_actors = self.program.num_actors
        counters: dict[str, Any] = {
            "actor_steps": 0, "learner_calls": 0, "episodes": 0, "wall_time_s": 0.0,
            "learner_credit": 0.0, "actor_restarts": 0, "evaluator_restarts": 0,
            "actor_own_steps": [0] * num_actors, "actor_episodes": [0] * num_actors,
        }
        if self.resume and checkpointer.latest_step() is not None:
            state, restored = checkpointer.restore(
                learner.state(), table if config.checkpoint_replay else None
            )
            learner.restore(state)
            counters.update(restored)
            logging.info("resumed from actor step %d (learner step %d, replay size %d)",
                         counters["actor_steps"], learner.steps, table.size)
        for key in ("actor_own_steps", "actor_episodes"):
            values = list(counters.get(key) or [])
            counters[key] = (values + [0] * num_actors)[:num_actors]
        self._table, self._counters = table, counters
        self._admission = AdmissionQueue(table)
        # Items received per actor index this run (steps counted minus these never became items).
        self._received = [0] * num_actors
        self._learner_steps = learner.steps

        self._actor_logs = {f"actor_{i}": run_dir.logger(f"actor_{i}")
                            for i in range(num_actors)}
        learner_log = run_dir.logger("learner")
        self._eval_log = run_dir.logger("eval", print_every_seconds=0.0)
        self._events = JSONLLogger(run_dir.path / "events.jsonl")
        tracker = CarbonTracker(run_dir.path, config.country_iso_code,
                                enabled=config.track_energy)

        publish_period = self.program.publish_period
        base_steps = int(counters["actor_steps"])
        pacing = ActorPacing(table, base_steps, num_actors, nodes.envs_per_actor(config),
                             builder.n_step, self.program.chunk_size)
        wall_offset = float(counters["wall_time_s"])
        max_steps = int(config.max_actor_steps)
        every_ckpt = int(config.checkpoint_every_steps)

        # Compile the learner update and the quantizer before the actors start, so that
        # compilation (seconds) is not time in which actors run with no learner.
        compile_start = time.perf_counter()
        warmup.warm_up(learner)
        first = packages.latest()
        self._published_version = first[0]
        logging.info("learner and quantizer compiled in %.1f s",
                     time.perf_counter() - compile_start)
        last_publish_cost = 0.0  # measured on the first (warm) publish
        last_publish_end = time.perf_counter()

        interrupted = False
        failure: BaseException | None = None
        energy = None
        learner_metrics: dict[str, float] = {}
        run_seconds = 0.0
        start = time.perf_counter()
        self._t0_wall = time.time() - wall_offset
        previous_sigterm = signal.signal(signal.SIGTERM, raise_stop_requested)
        progress = Progress(max_steps, f"{config.agent} {config.task} {config.quantizer} "
                            f"x{num_actors} {self.transport.name}")
        progress.update(min(base_steps, max_steps))
        shown_steps = min(base_steps, max_steps)

        started = False
        log_calls, log_start = 0, time.perf_counter()

        def global_steps() -> int:
            return self.transport.global_actor_steps() if started else base_steps

        def wall_time() -> float:
            return wall_offset + time.perf_counter() - start

        def write_learner_row(now: float) -> None:
            elapsed = max(now - log_start, 1e-9)
            learner_log.write({
                "actor_steps": global_steps(),
                "learner_steps": learner.steps,
                "wall_time_s": wall_time(),
                "replay_size": table.size,
                "published_version": self._published_version,
                "policy_lag": learner.steps - self._min_actor_version(),
                "learner_calls_per_s": log_calls / elapsed,
                "num_publishes": packages.num_packages,
                **pacing_row(table, self._admission),
                **drift_row,
                **learner_metrics,
            })

        def save_checkpoint() -> None:
            with self._lock:
                counters["actor_steps"] = global_steps()
                if started:
                    counters["actor_own_steps"] = self.transport.actor_steps()
                counters["wall_time_s"] = run_seconds if run_seconds else wall_time()
                saved = json_safe(counters)
            checkpointer.save(saved["actor_steps"], learner.state(), saved,
                              table if config.checkpoint_replay else None)

        tracker.start()
        try:
            if base_steps >= max_steps:
                raise _BudgetSpent()
            started = True
            self.transport.start(
                LaunchContext(
                    config=config, program=self.program, run_dir=run_dir.path,
                    base_actor_steps=base_steps,
                    actor_steps=list(counters["actor_own_steps"]),
                    actor_episodes=list(counters["actor_episodes"]),
                    t0_wall=self._t0_wall, first_package=first,
                    eval_at_start=base_steps == 0, step_limit=pacing.step_limit(),
                ),
                self._on_message,
            )
            self._write_pids()
            own_at_start = list(counters["actor_own_steps"])  # resumed counts: not this run's
            next_ckpt = (base_steps // every_ckpt + 1) * every_ckpt
            last_check = 0.0
            last_log = time.perf_counter()
            log_calls, log_start = 0, time.perf_counter()
            while True:
                now = time.perf_counter()
                if now - last_check >= 0.2:
                    last_check = now
                    events = self.transport.supervise()
                    for event in events:
                        key = ("evaluator_restarts" if event.get("node") == "evaluator"
                               else "actor_restarts")
                        counters[key] += 1
                        if key == "actor_restarts":
                            index = int(str(event["node"]).rsplit("_", 1)[1])
                            with self._lock:
                                received = self._received[index]
                            taken = self.transport.actor_steps()[index] - own_at_start[index]
                            pacing.actor_lost(index, taken - received)
                        self._event({**event, "wall_time_s": wall_time()})
                        logging.warning("restarted %s (exit code %s) at actor step %d",
                                        event.get("node"), event.get("exitcode"),
                                        global_steps())
                    if events:
                        self._write_pids()
                    steps = global_steps()
                    shown = min(steps, max_steps)
                    if shown > shown_steps:
                        progress.update(shown - shown_steps, eval=f"{self._last_eval:.1f}",
                                        learner=learner.steps)
                        shown_steps = shown
                    if self.transport.actors_finished():
                        break
                    if steps >= next_ckpt:
                        save_checkpoint()
                        next_ckpt = (steps // every_ckpt + 1) * every_ckpt
                self._admission.drain()
                self.transport.set_step_limit(pacing.step_limit())
                if not table.can_sample(batch_items):
                    self._inserted.wait(0.02)
                    self._inserted.clear()
                    continue
                learner_metrics = learner.step()
                counters["learner_calls"] += 1
                log_calls += 1
                self._learner_steps = learner.steps
                self.transport.set_learner_steps(learner.steps)
                stale = learner.steps - self._published_version
                now = time.perf_counter()
                if publish_period > 0:
                    due = stale >= publish_period
                else:
                    due = stale > 0 and now - last_publish_end >= 9.0 * last_publish_cost
                if due:
                    version, data = packages.latest()
                    self.transport.publish(version, data)
                    self._published_version = version
                    last_publish_end = time.perf_counter()
                    last_publish_cost = last_publish_end - now
                    drift_row = drift.measure(learner, packages) or drift_row
                if now - last_log >= config.log_every_seconds:
                    write_learner_row(now)
                    last_log, log_calls, log_start = now, 0, now
        except _BudgetSpent:
            logging.info("the checkpoint already has %d >= max_actor_steps actor steps: "
                         "no nodes to start", base_steps)
        except (KeyboardInterrupt, StopRequested):
            interrupted = True
            logging.warning("interrupted at actor step %d: stopping the nodes and saving a "
                            "checkpoint", global_steps())
        except BaseException as error:  # noqa: BLE001 - cleaned up below, then re-raised
            failure = error
        finally:
            # Shutdown must finish: ignore further Ctrl-C / SIGTERM while it runs (bounded).
            previous_sigint = signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            try:
                run_seconds = wall_time()
                progress.close()
                stop_start = time.perf_counter()
                try:
                    self.transport.shutdown(timeout=float(config.get("shutdown_timeout_s", 5.0)))
                except Exception:  # noqa: BLE001
                    logging.exception("error while stopping the nodes")
                logging.info("nodes stopped in %.2f s", time.perf_counter() - stop_start)
                final_steps = global_steps()
                if started:  # a run shorter than log_every_seconds still gets its row
                    try:
                        write_learner_row(time.perf_counter())
                    except Exception:  # noqa: BLE001
                        logging.exception("could not write the final learner row")
                if not interrupted and failure is None:
                    self._final_eval(config, builder, packages, final_steps, learner.steps,
                                     run_seconds)
                try:
                    save_checkpoint()
                except Exception:  # noqa: BLE001
                    logging.exception("could not save the final checkpoint")
                checkpointer.close()
                energy = tracker.stop()
                self._write_breakdowns()
                for log in (*self._actor_logs.values(), learner_log, self._eval_log,
                            self._events):
                    log.close()
                table.close()
                logging.info("shut down in %.2f s", time.perf_counter() - stop_start)
            finally:
                self.transport.close()
                signal.signal(signal.SIGTERM, previous_sigterm)
                signal.signal(signal.SIGINT, previous_sigint)
        if failure is not None:
            raise failure
        bytes_pulled, num_pulls = self._pull_totals()
        result = {
            "actor_steps": final_steps,
            "learner_steps": learner.steps,
            "wall_time_s": run_seconds,
            "final_eval_return": self._last_eval,
            "interrupted": interrupted,
            "energy_kwh": energy.energy_kwh,
            "emissions_kg": energy.emissions_kg,
            "bytes_pulled": bytes_pulled,
            "num_pulls": num_pulls,
            "actor_restarts": counters["actor_restarts"],
            "evaluator_restarts": counters["evaluator_restarts"],
            "launcher": self.transport.name,
            "num_actors": num_actors,
            "episodes": counters["episodes"],
            "num_publishes": packages.num_packages,
            "package_bytes": len(packages.sources[str(config.quantizer)].latest()[1]),
            "quantize_seconds": packages.quantize_seconds,
            "actor_quantizers": nodes.actor_quantizers(config),
            "actor_startup_s": self._mean_startup(),
        }
        self.run_dir.write_json("summary.json", result)
        return result

    # ---------------------------------------------------------------------------- helpers

    def _min_actor_version(self) -> int:
        with self._lock:
            versions = [max(r.items())[1].get("policy_version", -1)
                        for r in self._reports.values() if r]
        versions = [v for v in versions if v >= 0]
        return min(versions) if versions else self._published_version

    def _final_eval(self, config: Any, builder: Any, packages: Any, actor_steps: int,
                    learner_steps: int, wall_time_s: float) -> None:
        from launchpad_programs import nodes, workers

        try:
            evaluation = nodes.DualEvaluator(config, builder).run(
                packages.sources[str(config.quantizer)], packages.sources.get("fp32"))
        except Exception:  # noqa: BLE001
            logging.exception("final evaluation failed")
            return
        row = workers.eval_row(actor_steps, learner_steps, wall_time_s, evaluation)
        self._eval_log.write(row)
        self._last_eval = row["eval_return"]

    def _merged_reports(self) -> dict[str, Any]:
        """Per actor: the breakdowns of all its incarnations merged (consecutive periods)."""
        from actorq.runtime.breakdown import RuntimeBreakdown

        merged: dict[str, Any] = {}
        with self._lock:
            reports = {node: dict(r) for node, r in self._reports.items()}
        for i in range(self.program.num_actors):
            node = f"actor_{i}"
            total: RuntimeBreakdown | None = None
            for _, report in sorted(reports.get(node, {}).items()):
                part = RuntimeBreakdown.from_dict(report["breakdown"])
                total = part if total is None else total.merge(part, concurrent=False)
            merged[node] = total if total is not None else RuntimeBreakdown.from_dict({})
        return merged

    def _pull_totals(self) -> tuple[int, int]:
        with self._lock:
            reports = [r for per_node in self._reports.values() for r in per_node.values()]
        return (sum(int(r["breakdown"].get("bytes_pulled", 0)) for r in reports),
                sum(int(r.get("num_pulls", 0)) for r in reports))

    def _write_breakdowns(self) -> None:
        from actorq.runtime.breakdown import markdown_table
        from launchpad_programs.nodes import actor_quantizers

        precisions = actor_quantizers(self.config)
        summaries = {node: {"precision": precisions[int(node.rsplit("_", 1)[1])], **b.summary()}
                     for node, b in self._merged_reports().items()}
        with self._lock:
            for node, per_node in self._reports.items():
                if node in summaries and per_node:
                    summaries[node]["num_pulls"] = sum(int(r.get("num_pulls", 0))
                                                       for r in per_node.values())
                    summaries[node]["incarnations"] = len(per_node)
        self.run_dir.write_json("breakdown.json", summaries)
        (self.run_dir.path / "breakdown.md").write_text(markdown_table(summaries) + "\n")

    def _mean_startup(self) -> float:
        with self._lock:
            values = [v for node, vs in self._startup.items() if node.startswith("actor")
                      for v in vs]
        return float(sum(values) / len(values)) if values else float("nan")

    def _event(self, row: dict[str, Any]) -> None:
        """Appends to ``events.jsonl`` (written from the driver's and the receiver's threads)."""
        with self._pids_lock:
            self._events.write(row)

    def _write_pids(self) -> None:
        with self._pids_lock:
            self.run_dir.write_json("pids.json", self.transport.pids())


class _WarmupTable:
    """The replay table as the learner sees it, plus one all-zeros warm-up batch.

    ``warm_up(learner)`` runs one learner call on that batch (compiling its update) and then
    restores the learner's state, so the warm-up leaves no trace; afterwards every call goes
    to the real table.
    """

    def __init__(self, table: Any) -> None:
        self._table = table
        self._serve_warmup = False

    def warm_up(self, learner: Any) -> None:
        snapshot = learner.state()  # immutable jax arrays: safe to keep across a step
        self._serve_warmup = True
        try:
            learner.step()
        finally:
            self._serve_warmup = False
        learner.restore(snapshot)

    def sample(self, batch_size: int, timeout: float | None = None) -> Any:
        if not self._serve_warmup:
            return self._table.sample(batch_size, timeout=timeout)
        import numpy as np

        from actorq.replay.table import SampleBatch

        return SampleBatch(
            keys=-1 - np.arange(batch_size, dtype=np.int64),  # unknown keys: ignored
            probabilities=np.full(batch_size, 1.0 / batch_size),
            data={field: np.zeros((batch_size, *spec.shape), spec.dtype)
                  for field, spec in self._table.signature.items()},
            priorities=np.ones(batch_size),
            table_size=batch_size,
        )

    def update_priorities(self, keys: Any, priorities: Any) -> None:
        self._table.update_priorities(keys, priorities)

    @property
    def size(self) -> int:
        return self._table.size


def pacing_row(table: Any, admission: Any) -> dict[str, float]:
    """Learner-log fields that show how the rate limiter paces the run."""
    inserts = table.num_inserts
    return {
        "replay_inserts": inserts,
        "replay_samples": table.num_samples,
        "samples_per_insert": table.num_samples / inserts if inserts else 0.0,
        "admission_waiting": admission.waiting_items,
    }


def json_safe(value: Any) -> Any:
    """Plain JSON types (counters go through Orbax's JsonSave)."""
    return json.loads(json.dumps(value, default=float))


def raise_stop_requested(signum: int, frame: Any) -> None:
    """SIGTERM handler: unwind the main loop like Ctrl-C so everything is saved."""
    del signum, frame
    raise StopRequested()
