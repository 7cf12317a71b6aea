"""Single-process ActorQ: one actor and the learner interleaved in one process.

For debugging and small runs (``--config.launcher=single``). Pacing is the replay's rate limiter,
as in every launcher (``pacing.py``): the learner takes a call whenever the table lets it sample
one, otherwise the actor takes a step (its experience enters through the same admission queue).
With ``samples_per_insert`` s and calls of b items that is one learner call per b / s actor
steps once replay holds ``min_size`` items. ``wall_time_s`` is the time since the run started
(evaluations included), as in the other launchers.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import ml_collections
from absl import logging

from actorq.checkpointing import Checkpointer
from actorq.metrics.carbon import CarbonTracker
from actorq.metrics.progress import Progress
from actorq.replay import AdmissionQueue
from actorq.runtime.breakdown import RuntimeBreakdown, markdown_table
from actorq.runtime.environment_loop import EnvironmentLoop, EpisodeResult
from launchpad_programs import nodes
from launchpad_programs.driver import StopRequested, pacing_row
from launchpad_programs.pacing import ActorPacing
from launchpad_programs.run_directory import RunDirectory
from launchpad_programs.workers import eval_row


def crossed(before: int, after: int, every: int) -> bool:
    """Whether the step count passed a multiple of ``every`` going from ``before`` to ``after``."""
    return after // every > before // every


def run_single_process(
    config: ml_collections.ConfigDict, run_dir: RunDirectory, resume: bool = False
) -> dict[str, Any]:
    """Trains until ``config.max_actor_steps``; returns a summary dict. Ctrl-C/SIGTERM stop
    cleanly: a final checkpoint is written and every log is flushed."""
    builder = nodes.make_builder_for(config)
    table = nodes.make_table(config, builder)
    admission = AdmissionQueue(table)
    learner = nodes.make_learner(config, builder, table)
    packages = nodes.LearnerPackages(learner, builder, nodes.published_precisions(config))
    source = packages.sources[nodes.actor_quantizers(config)[0]]
    drift = nodes.DriftMonitor(builder, table, int(config.replay.min_size), config.seed)
    drift_row: dict[str, float] = {}
    drift_version = -1
    checkpointer = Checkpointer(run_dir.checkpoints)

    counters = {"actor_steps": 0, "learner_calls": 0, "episodes": 0, "wall_time_s": 0.0}
    if resume and checkpointer.latest_step() is not None:
        state, counters = checkpointer.restore(
            learner.state(), table if config.checkpoint_replay else None
        )
        learner.restore(state)
        logging.info("resumed from actor step %d (learner step %d, replay size %d)",
                     counters["actor_steps"], learner.steps, table.size)

    breakdown = RuntimeBreakdown()
    actor, client = nodes.make_actor(
        config, builder, source, 0, 1, admission.put_item, breakdown, counters["actor_steps"]
    )
    pacing = ActorPacing(table, counters["actor_steps"], 1, nodes.envs_per_actor(config),
                         builder.n_step, chunk_size=0)
    environments = nodes.actor_environments(config, 0, counters["actor_steps"])
    evaluator = nodes.DualEvaluator(config, builder)
    actor_log = run_dir.logger("actor")
    learner_log = run_dir.logger("learner")
    eval_log = run_dir.logger("eval", print_every_seconds=0.0)
    tracker = CarbonTracker(run_dir.path, config.country_iso_code, enabled=config.track_energy)

    learner_cfg = builder.config
    batch_items = learner_cfg.batch_size * learner_cfg.sgd_steps_per_call
    wall_offset = counters["wall_time_s"]
    start = time.perf_counter()
    last_return = float("nan")
    last_eval = float("nan")

    def wall_time() -> float:
        return wall_offset + time.perf_counter() - start

    def on_episode(result: EpisodeResult) -> None:
        nonlocal last_return
        last_return = result.episode_return
        counters["episodes"] += 1
        actor_log.write({
            "actor_steps": counters["actor_steps"] + 1,
            "learner_steps": learner.steps,
            "wall_time_s": wall_time(),
            "episode": counters["episodes"],
            "episode_return": result.episode_return,
            "episode_length": result.episode_length,
            "policy_version": client.version,
        })

    loop = EnvironmentLoop(environments, actor, breakdown, on_episode)

    def run_eval() -> None:
        nonlocal last_eval
        evaluation = evaluator.run(packages.sources[str(config.quantizer)],
                                   packages.sources.get("fp32"))
        row = eval_row(counters["actor_steps"], learner.steps, wall_time(), evaluation)
        last_eval = row["eval_return"]
        eval_log.write(row)

    def save_checkpoint() -> None:
        counters["wall_time_s"] = wall_time()
        checkpointer.save(
            counters["actor_steps"], learner.state(), dict(counters),
            table if config.checkpoint_replay else None,
        )

    # Ctrl-C and SIGTERM set a flag the loop checks between steps: an exception raised inside a
    # native call (an ONNX Runtime session in an evaluation) could leave it torn down badly.
    stop = {"requested": False}

    def request_stop(signum: int, frame: Any) -> None:
        del signum, frame
        stop["requested"] = True

    previous_handler = signal.signal(signal.SIGTERM, request_stop)
    previous_sigint = signal.signal(signal.SIGINT, request_stop)
    interrupted = False
    tracker.start()
    progress = Progress(config.max_actor_steps, f"{config.agent} {config.task} {config.quantizer}")
    progress.update(counters["actor_steps"])
    learner_metrics: dict[str, float] = {}
    last_learner_log = time.perf_counter()

    def write_learner_row() -> None:
        learner_log.write({"actor_steps": counters["actor_steps"],
                           "learner_steps": learner.steps, "wall_time_s": wall_time(),
                           "replay_size": table.size,
                           "policy_lag": learner.steps - client.version,
                           **pacing_row(table, admission), **drift_row, **learner_metrics})

    try:
        if counters["actor_steps"] == 0:
            run_eval()
        while counters["actor_steps"] < config.max_actor_steps:
            if stop["requested"]:
                raise StopRequested()
            admission.drain()
            if table.can_sample(batch_items):  # the rate limiter lets the learner take a call
                learner_metrics = learner.step()
                counters["learner_calls"] += 1
                if time.perf_counter() - last_learner_log > config.log_every_seconds:
                    last_learner_log = time.perf_counter()
                    write_learner_row()
                continue
            if counters["actor_steps"] >= pacing.step_limit():
                raise RuntimeError(  # pacing.error_buffer makes this unreachable
                    f"rate limiter stalled: the table {table.rate_limiter!r} admits no insert "
                    f"and no sample of {batch_items} (size {table.size}, inserts "
                    f"{table.num_inserts}, samples {table.num_samples})")
            before = loop.steps
            loop.step(max_transitions=config.max_actor_steps - counters["actor_steps"])
            taken = loop.steps - before
            previous_steps = counters["actor_steps"]
            counters["actor_steps"] += taken
            if client.version != drift_version:  # the actor pulled a new version
                drift_version = client.version
                drift_row = drift.measure(learner, packages) or drift_row
            steps = counters["actor_steps"]
            # With several environments per actor a step can jump over a multiple.
            if (crossed(previous_steps, steps, config.eval_every_steps)
                    or steps == config.max_actor_steps):
                run_eval()
            if crossed(previous_steps, steps, config.checkpoint_every_steps):
                save_checkpoint()
            progress.update(taken, ret=f"{last_return:.1f}", eval=f"{last_eval:.1f}")
    except (KeyboardInterrupt, StopRequested):
        interrupted = True
        logging.warning("interrupted at actor step %d: saving a checkpoint and stopping",
                        counters["actor_steps"])
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
        signal.signal(signal.SIGINT, previous_sigint)
        progress.close()
        write_learner_row()  # a run shorter than log_every_seconds still gets its row
        save_checkpoint()
        checkpointer.close()
        energy = tracker.stop()
        summary = {"precision": nodes.actor_quantizers(config)[0], **breakdown.summary()}
        run_dir.write_json("breakdown.json", {"actor_0": summary})
        (run_dir.path / "breakdown.md").write_text(markdown_table({"actor_0": summary}) + "\n")
        for log in (actor_log, learner_log, eval_log):
            log.close()
        table.close()
    result = {
        "actor_steps": counters["actor_steps"],
        "learner_steps": learner.steps,
        "wall_time_s": counters["wall_time_s"],
        "final_eval_return": last_eval,
        "interrupted": interrupted,
        "energy_kwh": energy.energy_kwh,
        "emissions_kg": energy.emissions_kg,
        "bytes_pulled": breakdown.bytes_pulled,
        "num_pulls": client.num_pulls,
    }
    run_dir.write_json("summary.json", result)
    return result
