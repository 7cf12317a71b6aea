"""Single-process ActorQ: one actor and the learner interleaved in one process.

For debugging and small runs (``--config.launcher=single``). The learner takes
``samples_per_insert / (batch_size * sgd_steps_per_call)`` update calls per actor step once
replay holds ``min_size`` items. Evaluation time is excluded from the reported ``wall_time_s``.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import ml_collections
import numpy as np
from absl import logging

from actorq.checkpointing import Checkpointer
from actorq.metrics.carbon import CarbonTracker
from actorq.metrics.progress import Progress
from actorq.runtime.breakdown import RuntimeBreakdown, markdown_table
from actorq.runtime.environment_loop import EnvironmentLoop, EpisodeResult
from launchpad_programs import nodes
from launchpad_programs.driver import StopRequested, raise_stop_requested
from launchpad_programs.run_directory import RunDirectory


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
    learner = nodes.make_learner(config, builder, table)
    source = nodes.LearnerVariableSource(learner, builder, config.quantizer)
    checkpointer = Checkpointer(run_dir.checkpoints)

    counters = {"actor_steps": 0, "learner_calls": 0, "episodes": 0, "wall_time_s": 0.0,
                "learner_credit": 0.0}
    if resume and checkpointer.latest_step() is not None:
        state, counters = checkpointer.restore(
            learner.state(), table if config.checkpoint_replay else None
        )
        learner.restore(state)
        logging.info("resumed from actor step %d (learner step %d, replay size %d)",
                     counters["actor_steps"], learner.steps, table.size)

    breakdown = RuntimeBreakdown()
    actor, client = nodes.make_actor(
        config, builder, source, 0, 1, table.insert, breakdown, counters["actor_steps"]
    )
    environments = nodes.actor_environments(config, 0, counters["actor_steps"])
    evaluator = nodes.Evaluator(config, builder)
    actor_log = run_dir.logger("actor")
    learner_log = run_dir.logger("learner")
    eval_log = run_dir.logger("eval", print_every_seconds=0.0)
    tracker = CarbonTracker(run_dir.path, config.country_iso_code, enabled=config.track_energy)

    learner_cfg = builder.config
    calls_per_step = config.replay.samples_per_insert / (
        learner_cfg.batch_size * learner_cfg.sgd_steps_per_call
    )
    wall_offset = counters["wall_time_s"]
    start = time.perf_counter()
    eval_seconds = 0.0
    last_return = float("nan")
    last_eval = float("nan")

    def wall_time() -> float:
        return wall_offset + time.perf_counter() - start - eval_seconds

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
        nonlocal eval_seconds, last_eval
        begin = time.perf_counter()
        version, returns = evaluator.run(source)
        eval_seconds += time.perf_counter() - begin
        last_eval = float(np.mean(returns))
        eval_log.write({
            "actor_steps": counters["actor_steps"],
            "learner_steps": learner.steps,
            "wall_time_s": wall_time(),
            "eval_return": last_eval,
            "eval_return_std": float(np.std(returns)),
            "policy_version": version,
        })

    def save_checkpoint() -> None:
        counters["wall_time_s"] = wall_time()
        checkpointer.save(
            counters["actor_steps"], learner.state(), dict(counters),
            table if config.checkpoint_replay else None,
        )

    previous_handler = signal.signal(signal.SIGTERM, raise_stop_requested)
    interrupted = False
    tracker.start()
    progress = Progress(config.max_actor_steps, f"{config.agent} {config.task} {config.quantizer}")
    progress.update(counters["actor_steps"])
    learner_metrics: dict[str, float] = {}
    last_learner_log = 0.0
    try:
        if counters["actor_steps"] == 0:
            run_eval()
        while counters["actor_steps"] < config.max_actor_steps:
            before = loop.steps
            loop.step(max_transitions=config.max_actor_steps - counters["actor_steps"])
            taken = loop.steps - before
            previous_steps = counters["actor_steps"]
            counters["actor_steps"] += taken
            if table.size >= config.replay.min_size:
                counters["learner_credit"] += calls_per_step * taken
                batch_items = learner_cfg.batch_size * learner_cfg.sgd_steps_per_call
                while counters["learner_credit"] >= 1.0 and table.can_sample(batch_items):
                    learner_metrics = learner.step()
                    counters["learner_calls"] += 1
                    counters["learner_credit"] -= 1.0
            steps = counters["actor_steps"]
            log_due = time.perf_counter() - last_learner_log > config.log_every_seconds
            if log_due and learner_metrics:
                last_learner_log = time.perf_counter()
                learner_log.write({"actor_steps": steps, "learner_steps": learner.steps,
                                   "wall_time_s": wall_time(), "replay_size": table.size,
                                   "policy_lag": learner.steps - client.version,
                                   **learner_metrics})
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
        progress.close()
        save_checkpoint()
        checkpointer.close()
        energy = tracker.stop()
        summary = breakdown.summary()
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
