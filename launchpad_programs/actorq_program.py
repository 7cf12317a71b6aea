"""The ActorQ program: a learner, quantized actors and an evaluator as a graph of nodes.

    program = make_program(config, run_dir)
    print(program)                       # nodes, what each runs, channels
    summary = launch(program, "local")   # or "single", "ray"

Nodes (each carries the class that builds it; any launcher runs them):

* ``learner`` (main): the replay table, the full-precision learner, the rate limiter, the
  quantizer; publishes packages, logs, checkpoints and evaluates at the end;
* ``evaluator``: noise-free episodes of the deployed package (and the learner's fp32 policy)
  every ``eval_every_steps`` global actor steps; restarted when it dies;
* ``actor_0 .. actor_{N-1}``: a FeedForwardActor on its environments with its own precision's
  package (``config.actor_quantizers``), pulling every ``pull_period`` steps; restarted when it
  dies.

Channels: ``weights`` (variable: one package per precision in use, once per version),
``experience`` (stream: numpy chunks of n-step transitions), ``logs`` (stream: episode rows,
evaluation rows, runtime reports) and ``steps`` (counter: one slot per actor, bounded by
``max_actor_steps``, limited by the replay's rate limiter, with the ``learner_steps`` gauge).

Pacing is the replay table's rate limiter (``pacing.py``), for every launcher: experience enters
the table through an admission queue at the pace the limiter admits, the learner steps when the
table lets it sample a whole call's batch, and actors acquire steps below the limit the learner
sets on the ``steps`` counter (an actor at the limit flushes its experience and waits: the
``blocked`` column of its breakdown).

Publishing follows ``publish_period`` (``publish_schedule.py``): every that many learner steps,
or by default right before the single launcher's pulls, elsewhere whenever quantizing costs at
most ~10% of the learner's time.

``wall_time_s`` everywhere is the time since the run started (plus the time of the runs it
resumes), evaluations included.
"""

from __future__ import annotations

import os
import time
from typing import Any

import ml_collections
from absl import logging

from actorq.core import Builder
from launchpad_programs.actor_reports import ActorReports
from launchpad_programs.data_path import DataPath
from launchpad_programs.learner_checkpoints import LearnerCheckpoints
from launchpad_programs.program import FINISHED, IDLE, WORKED, Channel, Node, NodeContext, Program
from launchpad_programs.publish_schedule import PublishSchedule
from launchpad_programs.run_directory import RunDirectory

REPORT_EVERY_S = 1.0
HOUSEKEEPING_EVERY_S = 0.2  # progress, checkpoints and supervision events in the learner


def publish_policy(config: ml_collections.ConfigDict) -> str:
    """How often the learner publishes, in words."""
    period = int(config.publish_period)
    if period > 0:
        return f"every {period} learner steps"
    return "whenever stale, at most ~10% of learner time spent quantizing (publish_period=0)"


def envs_label(config: ml_collections.ConfigDict) -> str:
    """``"4 x "`` for an actor with 4 environments, ``""`` for the paper's one."""
    from launchpad_programs.nodes import envs_per_actor

    k = envs_per_actor(config)
    return f"{k} x " if k > 1 else ""


def _item_name(builder: Builder) -> str:
    if builder.data_path == "queue":
        return f"{builder.steps_per_item}-step unroll"
    return f"{builder.n_step}-step transition"


def _data_description(config: ml_collections.ConfigDict, builder: Builder) -> str:
    """The learner's batches and table, in words."""
    replay = config.replay
    if builder.data_path == "queue":
        return (f"batches of {builder.batch_items} {_item_name(builder)}s from a "
                f"Queue(max_size={replay.max_size}) (FIFO, each unroll once)")
    pacing = (f"paced at {replay.samples_per_insert:g} samples/insert (ratio rate limiter)"
              if replay.rate_limiter == "ratio" else "unpaced (rate limiter none)")
    return (f"batch {builder.config.batch_size} x {builder.config.sgd_steps_per_call} SGD "
            f"steps/call, replay Table(max_size={replay.max_size}, min_size={replay.min_size}, "
            f"{'prioritized' if builder.uses_priorities else 'uniform'}), {pacing}")


def program_actors(config: ml_collections.ConfigDict) -> int:
    """Actor nodes in the program: ``num_actors`` (one for the single launcher, which
    interleaves one actor with the learner)."""
    if config.launcher == "single":
        return 1
    return int(config.num_actors)


def make_program(config: ml_collections.ConfigDict, run_dir: RunDirectory | None = None,
                 resume: bool = False, builder: Builder | None = None) -> Program:
    """The ActorQ program for ``config`` (agent, task, quantizers and actor count from it).
    ``run_dir`` is where the learner writes (needed to launch, not to print)."""
    from launchpad_programs import nodes as node_lib
    from launchpad_programs.placement import ray_actor_options, ray_learner_options
    from launchpad_programs.thread_env import SINGLE_THREAD_ENV

    num_actors = program_actors(config)
    if num_actors < 1:
        raise ValueError(f"an ActorQ program needs num_actors >= 1, got {num_actors}")
    builder = builder if builder is not None else node_lib.make_builder_for(config)
    network = builder.policy_network
    chunk_size = int(config.chunk_size)
    precisions = node_lib.actor_quantizers(config)
    policy = (f"MLP {builder.observation_size} -> {'x'.join(map(str, network.hidden_sizes))} "
              f"-> {network.output_size}")
    actor_names = tuple(f"actor_{i}" for i in range(num_actors))
    actor_options = ray_actor_options(config)
    nodes: list[Node] = [
        Node(
            "learner", LearnerNode,
            kwargs={"config": config, "run_dir": run_dir, "resume": resume,
                    "actors": actor_names, "evaluator": "evaluator"},
            kind="learner", main=True, ray_options=ray_learner_options(config),
            runs=(f"{type(builder).__name__}.make_learner: full-precision {config.agent} on "
                  f"{policy}, {_data_description(config, builder)}"
                  + f"; quantizes with {', '.join(node_lib.published_precisions(config))} and "
                  f"publishes {publish_policy(config)}"),
        ),
    ]
    nodes.append(Node(
        "evaluator", EvaluatorNode, kwargs={"config": config, "eval_at_start": not resume},
        kind="evaluator", restart=True, abandon_on_stop=True, env=SINGLE_THREAD_ENV,
        runs=(f"{config.eval_episodes} noise-free episodes of the newest {config.quantizer} "
              f"package every {config.eval_every_steps} global actor steps"),
    ))
    for i in range(num_actors):
        nodes.append(Node(
            f"actor_{i}", ActorNode,
            kwargs={"config": config, "index": i, "num_actors": num_actors,
                    "chunk_size": chunk_size},
            kind="actor", restart=True, env=SINGLE_THREAD_ENV, ray_options=actor_options,
            runs=(f"FeedForwardActor on {envs_label(config)}{config.task} "
                  f"({config.actor_runtime} runtime, {precisions[i]} package, exploration "
                  f"{i}/{num_actors}), pulls every {config.pull_period} steps, "
                  f"{_item_name(builder)} adder, chunks of {chunk_size} steps"),
        ))
    channels = (
        Channel("weights", "variable", ("learner",), (*actor_names, "evaluator"),
                f"one package per precision in use ({', '.join(dict.fromkeys(precisions))}), "
                f"once per version; actors pull every {config.pull_period} steps"),
        Channel("experience", "stream", actor_names, ("learner",),
                f"numpy chunks of {chunk_size} steps as {_item_name(builder)}s"),
        Channel("logs", "stream", (*actor_names, "evaluator"), ("learner",),
                "episode rows, evaluation rows, runtime breakdowns"),
        Channel("steps", "counter", actor_names, ("learner", "evaluator"),
                f"global actor steps (budget {config.max_actor_steps}), the rate limiter's "
                "limit, learner steps",
                max_total=int(config.max_actor_steps), gauges=("learner_steps",)),
    )
    return Program(
        name=f"{config.agent}/{config.task}",
        nodes=tuple(nodes),
        channels=channels,
        settings={"agent": str(config.agent), "task": str(config.task),
                  "quantizer": str(config.quantizer), "num_actors": num_actors,
                  "chunk_size": chunk_size,
                  "publish_period": int(config.publish_period)},
    )


# ------------------------------------------------------------------------------------- actors


class ActorNode:
    """``actor_i``: steps its environments with its precision's package, acquiring steps from
    the ``steps`` counter; experience goes out in chunks, episodes and runtime reports on
    ``logs``."""

    def __init__(self, ctx: NodeContext, config: ml_collections.ConfigDict, index: int,
                 num_actors: int, chunk_size: int) -> None:
        from launchpad_programs import nodes, workers

        self._ctx = ctx
        self._index = index
        self._counter = ctx.counter("steps")
        self._logs = ctx.stream("logs")
        experience = ctx.stream("experience")
        builder = nodes.make_builder_for(config)
        precision = nodes.actor_quantizers(config)[index]
        incarnation = ctx.incarnation
        self._worker = workers.ActorWorker(
            config, builder, index, num_actors, ctx.variable("weights").reader(precision),
            send_chunk=experience.send,
            # A restarted actor gets fresh randomness; its exploration schedule continues.
            seed_offset=self._counter.total() + 101 * incarnation,
            exploration_steps_done=self._counter.slots()[index],
            chunk_size=chunk_size,
        )
        self._envs = nodes.envs_per_actor(config)
        self._blocked_since: float | None = None
        self._last_report = time.perf_counter()

    def step(self) -> str:
        worker = self._worker
        granted = self._counter.acquire(self._envs)
        if granted == 0:
            if self._counter.exhausted():
                return FINISHED
            if self._blocked_since is None:  # the rate limiter: the learner is behind
                worker.chunks.flush()  # it may be waiting for exactly these items
                self._blocked_since = time.perf_counter()
            return IDLE
        if self._blocked_since is not None:
            worker.breakdown.add("blocked", time.perf_counter() - self._blocked_since)
            self._blocked_since = None
        taken, results = worker.step(max_transitions=granted)
        self._counter.commit(taken)
        if worker.calls == 1:
            # The breakdown so far (first pull, load, compilation) separates start-up from
            # steady-state acting.
            self._ctx.ready(first_step=worker.report())
        for result in results:
            self._logs.send(("episode", {
                "actor_steps": self._counter.total(),
                "actor": self._index,
                "learner_steps": self._counter.gauge("learner_steps"),
                "time": time.time(),
                "episode_return": result.episode_return,
                "episode_length": result.episode_length,
                "policy_version": worker.policy_version,
            }))
        if worker.calls % 16 == 0 and time.perf_counter() - self._last_report >= REPORT_EVERY_S:
            self._last_report = time.perf_counter()
            self._report(final=False)
        return WORKED

    def _report(self, final: bool) -> None:
        self._logs.send(("report", {**self._worker.report(), "incarnation": self._ctx.incarnation,
                                    "final": final, "pid": os.getpid()}))

    def close(self, interrupted: bool) -> None:
        del interrupted  # either way: flush the experience, send the last breakdown
        self._worker.close()
        self._report(final=True)


class EvaluatorNode:
    """``evaluator``: evaluates the newest package when the global step count passes a multiple
    of ``eval_every_steps`` (and at step 0 of a fresh run)."""

    def __init__(self, ctx: NodeContext, config: ml_collections.ConfigDict,
                 eval_at_start: bool) -> None:
        from launchpad_programs import nodes

        self._ctx = ctx
        self._counter = ctx.counter("steps")
        self._logs = ctx.stream("logs")
        builder = nodes.make_builder_for(config)
        self._evaluator = nodes.DualEvaluator(config, builder)
        weights = ctx.variable("weights")
        self._source = weights.reader(str(config.quantizer))
        self._fp32 = weights.reader("fp32") if nodes.evaluates_fp32(config) else None
        self._every = int(config.eval_every_steps)
        self._max = int(config.max_actor_steps)
        total = self._counter.total()
        self._next = 0 if eval_at_start and ctx.incarnation == 0 else (
            (total // self._every + 1) * self._every)
        ctx.ready()

    def step(self) -> str:
        from launchpad_programs import workers

        steps = self._counter.total()
        if self._next >= self._max or self._counter.exhausted():
            return FINISHED  # the learner evaluates the final policy itself
        if steps < self._next:
            return IDLE
        # The row describes the moment the evaluated package was taken.
        learner_steps, stamp = self._counter.gauge("learner_steps"), time.time()
        evaluation = self._evaluator.run(self._source, self._fp32)
        row = workers.eval_row(steps, learner_steps, 0.0, evaluation)
        row["time"] = stamp
        self._logs.send(("eval", row))
        self._next = (self._counter.total() // self._every + 1) * self._every
        return WORKED

    def close(self, interrupted: bool) -> None:
        del interrupted


# ------------------------------------------------------------------------------------ learner


class LearnerNode:
    """``learner`` (main): replay, learner, rate limiter, publishing, logs, checkpoints.

    Built before the other nodes start: it restores a checkpoint, compiles the learner update
    and the quantizer, publishes the first packages and sets the ``steps`` counter, so actors
    start from a ready policy and the resumed counts.
    """

    def __init__(self, ctx: NodeContext, config: ml_collections.ConfigDict,
                 run_dir: RunDirectory, resume: bool, actors: tuple[str, ...],
                 evaluator: str) -> None:
        from actorq.checkpointing import NoIntactCheckpointError
        from actorq.metrics.carbon import CarbonTracker
        from actorq.metrics.loggers import EVENTS_FILE, JSONLLogger
        from actorq.metrics.progress import Progress
        from launchpad_programs import nodes

        if run_dir is None:
            raise ValueError("launching an ActorQ program needs make_program(config, run_dir)")
        self._ctx, self.config, self.run_dir = ctx, config, run_dir
        self._actors, self._evaluator_name = actors, evaluator
        num_actors = len(actors)
        self._experience, self._logs = ctx.stream("experience"), ctx.stream("logs")
        self._counter = ctx.counter("steps")
        self._weights = ctx.variable("weights")
        builder = nodes.make_builder_for(config)
        self.builder = builder
        # The data-path part (replay table or queue, admission, actor pacing); the rest of
        # this node (publishing, checkpoints, logs, drift, energy, progress) serves both paths.
        self._data = DataPath(config, builder)
        table = self._data.table
        learner = self._data.make_learner()
        self._packages = nodes.LearnerPackages(learner, builder,
                                               nodes.published_precisions(config),
                                               nodes.fp32_package_versions(config))
        # A queue is drained by every learner call: one unroll (T observations) is enough
        # (taken before the call: DriftMonitor.capture).
        drift_min = 1 if builder.data_path == "queue" else int(config.replay.min_size)
        self._drift = nodes.DriftMonitor(builder, table, drift_min, config.seed)
        self._drift_row: dict[str, float] = {}
        self._events = JSONLLogger(run_dir.path / EVENTS_FILE)
        self._checkpoints = LearnerCheckpoints(run_dir, config, self._events)
        counters: dict[str, Any] = {
            "actor_steps": 0, "learner_calls": 0, "episodes": 0, "wall_time_s": 0.0,
            "actor_restarts": 0, "evaluator_restarts": 0,
            "actor_own_steps": [0] * num_actors, "actor_episodes": [0] * num_actors,
        }
        if resume:
            # The newest checkpoint whose learner state, counters and replay all read; damaged
            # newer ones are skipped (a checkpoint_skipped row each in events.jsonl).
            try:
                restored = self._checkpoints.restore(learner, table)
            except NoIntactCheckpointError:
                self._events.close()
                raise
            if restored is not None:
                counters.update(restored.counters)
                logging.info("resumed from actor step %d (learner step %d, replay size %d)",
                             counters["actor_steps"], learner.steps, table.size)
            # resumes.jsonl: the allowed config changes and the pair this resume continues.
            run_dir.record_resume(
                int(counters["actor_steps"]), learner_steps=int(learner.steps),
                checkpoint_step=restored.step if restored else None,
                replay_size=int(table.size),
                skipped_checkpoints=[s.step for s in restored.skipped] if restored else [])
        for key in ("actor_own_steps", "actor_episodes"):
            values = list(counters.get(key) or [])
            counters[key] = (values + [0] * num_actors)[:num_actors]
        self._table, self._learner, self._counters = table, learner, counters
        self._actor_reports = ActorReports(actors)
        self._last_eval = float("nan")
        self._actor_logs = {name: run_dir.logger(name) for name in actors}
        self._learner_log = run_dir.logger("learner")
        self._eval_log = run_dir.logger("eval", print_every_seconds=0.0)
        self._tracker = CarbonTracker(run_dir.path, config.country_iso_code,
                                      enabled=config.track_energy)
        base_steps = int(counters["actor_steps"])
        self._base_steps = base_steps
        self._data.start(base_steps, counters["actor_own_steps"])
        self._wall_offset = float(counters["wall_time_s"])
        self._max_steps = int(config.max_actor_steps)
        self._checkpoints.start(base_steps)

        # Compile the learner update and the quantizer before the actors start, so that
        # compilation (seconds) is not time in which actors run with no learner.
        compile_start = time.perf_counter()
        self._data.warm_up(learner)
        self._publish()
        logging.info("learner and quantizer compiled in %.1f s",
                     time.perf_counter() - compile_start)
        self._schedule = PublishSchedule(config, base_steps)
        self._counter.reset(base_steps, list(counters["actor_own_steps"]))
        self._counter.set_gauge("learner_steps", learner.steps)
        self._counter.set_limit(self._data.step_limit())
        self._budget_spent = base_steps >= self._max_steps
        if self._budget_spent:
            logging.info("the checkpoint already has %d >= max_actor_steps actor steps: only "
                         "the final evaluation is left", base_steps)

        self._learner_metrics: dict[str, float] = {}
        self._start = time.perf_counter()
        self._t0_wall = time.time() - self._wall_offset
        self._run_seconds = 0.0
        self._progress = Progress(self._max_steps, f"{config.agent} {config.task} "
                                  f"{config.quantizer} x{num_actors} {config.launcher}")
        self._shown_steps = min(base_steps, self._max_steps)
        self._progress.update(self._shown_steps)
        self._last_housekeeping = 0.0
        self._last_log = time.perf_counter()
        self._log_calls, self._log_start = 0, time.perf_counter()
        self._tracker.start()
        self._write_pids()

    # ------------------------------------------------------------------------------ loop

    def _wall_time(self) -> float:
        return self._wall_offset + time.perf_counter() - self._start

    def _publish(self) -> None:
        version, data = self._packages.latest()
        for precision, package in data.items():
            self._weights.publish(precision, version, package)
        self._published_version = version

    def _publish_for_pull(self) -> None:
        """Single launcher: when the actor's last step made a pull due, publishes what the
        learner has now. The actor takes the pull before its next action, after this learner
        step, so it acts with a version that learned from all the data it sent before."""
        if not self._schedule.pull_due(self._counter.total()):
            return
        if self._learner.steps > self._published_version:
            self._publish()
            self._drift_row = (self._drift.measure(self._learner, self._packages)
                               or self._drift_row)

    def step(self) -> str:
        if self._budget_spent:
            return FINISHED
        worked = self._receive()
        now = time.perf_counter()
        if now - self._last_housekeeping >= HOUSEKEEPING_EVERY_S:
            self._last_housekeeping = now
            self._housekeeping()
            # With the actors done, a learner whose sampling the table bounds takes the
            # batches it is still owed first (how many must not depend on when this check
            # runs: a run is reproducible from its seed); an unbounded one stops now.
            if self._ctx.finished(self._actors) and not (
                    self._data.sampling_bounded and self._data.batch_ready()):
                return FINISHED
        self._data.drain()
        self._counter.set_limit(self._data.step_limit())
        if not self._data.batch_ready():
            self._publish_for_pull()
            if not worked and self._ctx.finished(self._actors):
                return FINISHED
            return WORKED if worked else IDLE
        learner = self._learner
        self._drift.capture(self._packages)
        self._learner_metrics = learner.step()
        self._counters["learner_calls"] += 1
        self._log_calls += 1
        self._counter.set_gauge("learner_steps", learner.steps)
        stale = learner.steps - self._published_version
        now = time.perf_counter()
        if self._schedule.on_pulls:
            self._publish_for_pull()
        if self._schedule.due(stale, now):
            self._publish()
            self._schedule.published(now, time.perf_counter())
            self._drift_row = self._drift.measure(learner, self._packages) or self._drift_row
        if now - self._last_log >= self.config.log_every_seconds:
            self._write_learner_row(now)
            self._last_log, self._log_calls, self._log_start = now, 0, now
        return WORKED

    def _receive(self) -> bool:
        """Takes in what the other nodes sent; whether anything arrived."""
        arrived = False
        for source, chunk in self._experience.receive():
            arrived = True
            self._data.receive(self._actors.index(source), chunk)
        for source, (kind, payload) in self._logs.receive():
            arrived = True
            self._on_log(source, kind, payload)
        for event in self._ctx.events():
            arrived = True
            self._on_event(event)
        return arrived

    def _on_log(self, node: str, kind: str, payload: dict[str, Any]) -> None:
        if kind == "episode":
            index = self._actors.index(node)
            self._counters["episodes"] += 1
            self._counters["actor_episodes"][index] += 1
            row = {"actor_steps": payload["actor_steps"], "actor": index,
                   "learner_steps": payload["learner_steps"],
                   "wall_time_s": payload.pop("time") - self._t0_wall,
                   # Numbered here so a restarted actor continues the sequence.
                   "episode": self._counters["actor_episodes"][index], **payload}
            self._actor_logs[node].write(row)
        elif kind == "report":
            self._actor_reports.report(node, payload)
        elif kind == "eval":
            payload["wall_time_s"] = payload.pop("time") - self._t0_wall
            self._eval_log.write(payload)
            self._last_eval = float(payload["eval_return"])
        else:
            logging.warning("unknown %r message from %s", kind, node)

    def _on_event(self, event: dict[str, Any]) -> None:
        node, kind = str(event.get("node")), event.get("event")
        if kind == "ready":
            self._actor_reports.ready(node, event)
            self._write_pids()
            self._event({k: v for k, v in event.items() if isinstance(v, int | float | str)})
        elif kind == "restart":
            if node in self._actors:
                self._counters["actor_restarts"] += 1
                index = self._actors.index(node)
                self._data.actor_lost(index, self._counter.slots()[index])
            else:
                self._counters["evaluator_restarts"] += 1
            logging.warning("restarted %s (exit code %s) at actor step %d", node,
                            event.get("exitcode"), self._counter.total())
            self._write_pids()
            self._event({**event, "actor_steps": self._counter.total(),
                         "wall_time_s": self._wall_time()})
        elif kind == "error":
            trace = str(event.get("traceback"))
            logging.error("%s failed:\n%s", node, trace)
            self._event({"event": "error", "node": node, "error": trace[-2000:]})
            if "NonFiniteError" in trace:
                # A NaN from the environment would recur in every restart: stop the run, naming
                # the task and the step (the error's own message), before a NaN reaches replay.
                last = [line for line in trace.splitlines() if line.strip()][-1]
                raise FloatingPointError(f"{node} stopped the run: {last.split(': ', 1)[-1]}")
        elif kind == "node_lost":
            logging.warning("lost cluster node %s at actor step %d; its nodes are restarted "
                            "elsewhere", event.get("ray_node"), self._counter.total())
            self._event({**event, "actor_steps": self._counter.total(),
                         "wall_time_s": self._wall_time()})
        else:
            self._event(event)

    def _housekeeping(self) -> None:
        steps = self._counter.total()
        shown = min(steps, self._max_steps)
        if shown > self._shown_steps:
            self._progress.update(shown - self._shown_steps, eval=f"{self._last_eval:.1f}",
                                  learner=self._learner.steps)
            self._shown_steps = shown
        if self._checkpoints.due(steps):
            self._save_checkpoint()

    def _write_learner_row(self, now: float) -> None:
        elapsed = max(now - self._log_start, 1e-9)
        self._learner_log.write({
            "actor_steps": self._counter.total(),
            "learner_steps": self._learner.steps,
            "wall_time_s": self._wall_time(),
            "published_version": self._published_version,
            "policy_lag": self._learner.steps - self._actor_reports.min_policy_version(
                self._published_version),
            "learner_calls_per_s": self._log_calls / elapsed,
            "num_publishes": self._packages.num_packages,
            **self._data.log_row(),
            **self._drift_row,
            **self._learner_metrics,
        })

    def _save_checkpoint(self) -> None:
        counters = self._counters
        counters["actor_steps"] = self._counter.total()
        counters["actor_own_steps"] = self._counter.slots()
        counters["wall_time_s"] = self._run_seconds or self._wall_time()
        self._checkpoints.save(self._learner, counters, self._table)

    # ----------------------------------------------------------------------------- close

    def close(self, interrupted: bool) -> dict[str, Any]:
        """Runs after the other nodes stopped: takes their last messages, writes the final
        rows, evaluates (unless interrupted), checkpoints and writes the summary."""
        from launchpad_programs import nodes

        config, learner = self.config, self._learner
        self._run_seconds = self._wall_time()
        self._progress.close()
        try:
            self._receive()
            self._data.drain()
        except Exception:  # noqa: BLE001
            logging.exception("could not take in the nodes' last messages")
        final_steps = self._counter.total()
        if interrupted:
            logging.warning("interrupted at actor step %d: saving a checkpoint", final_steps)
        try:
            self._write_learner_row(time.perf_counter())  # a short run still gets its row
        except Exception:  # noqa: BLE001
            logging.exception("could not write the final learner row")
        if not interrupted:
            self._final_eval(final_steps)
        try:
            self._save_checkpoint()
        except Exception:  # noqa: BLE001
            logging.exception("could not save the final checkpoint")
        self._checkpoints.close()
        energy = self._tracker.stop()
        self._write_breakdowns()
        for log in (*self._actor_logs.values(), self._learner_log, self._eval_log,
                    self._events):
            log.close()
        self._data.close()
        reports = self._actor_reports
        bytes_pulled, num_pulls = reports.pull_totals()
        packages = self._packages
        result = {
            "actor_steps": final_steps,
            "learner_steps": learner.steps,
            "wall_time_s": self._run_seconds,
            "final_eval_return": self._last_eval,
            "interrupted": interrupted,
            "energy_kwh": energy.energy_kwh,
            "emissions_kg": energy.emissions_kg,
            "bytes_pulled": bytes_pulled,
            "bytes_pulled_per_node": reports.bytes_pulled_per_node(),
            "num_pulls": num_pulls,
            "actor_restarts": self._counters["actor_restarts"],
            "evaluator_restarts": self._counters["evaluator_restarts"],
            "launcher": str(config.launcher),
            "num_actors": len(self._actors),
            "episodes": self._counters["episodes"],
            "num_publishes": packages.num_packages,
            "package_bytes": len(packages.sources[str(config.quantizer)].latest()[1]),
            # Precisions whose packages were fitted to replay observations (GPTQ, the recipe).
            "calibrated_precisions": sorted(p for p, source in packages.sources.items()
                                            if source.calibrated),
            # Calibration batches taken: the first, then one per doubling of the inserts.
            "calibrations": self._drift.calibrations,
            "quantize_seconds": packages.quantize_seconds,
            "actor_quantizers": nodes.actor_quantizers(config)[:len(self._actors)],
            "actor_startup_s": reports.mean_startup_s(),
        }
        self.run_dir.write_json("summary.json", result)
        return result

    def _final_eval(self, actor_steps: int) -> None:
        from launchpad_programs import nodes, workers

        packages = self._packages
        try:
            evaluation = nodes.DualEvaluator(self.config, self.builder).run(
                packages.sources[str(self.config.quantizer)], packages.sources.get("fp32"))
        except Exception:  # noqa: BLE001
            logging.exception("final evaluation failed")
            return
        row = workers.eval_row(actor_steps, self._learner.steps, self._run_seconds, evaluation)
        self._eval_log.write(row)
        self._last_eval = row["eval_return"]

    # --------------------------------------------------------------------------- helpers

    def _write_breakdowns(self) -> None:
        from actorq.runtime.breakdown import markdown_table
        from launchpad_programs.nodes import actor_quantizers

        summaries = self._actor_reports.breakdowns(actor_quantizers(self.config))
        self.run_dir.write_json("breakdown.json", summaries)
        (self.run_dir.path / "breakdown.md").write_text(markdown_table(summaries) + "\n")

    def _event(self, row: dict[str, Any]) -> None:
        self._events.write(row)

    def _write_pids(self) -> None:
        self.run_dir.write_json("pids.json", self._ctx.pids())

