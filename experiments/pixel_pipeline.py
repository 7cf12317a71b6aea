"""Pixel pipeline check: a short run per (agent, game) through every part of the system.

Each run is the agent's preset for the game (``configs/<agent>_actorq.py:<game>``: Nature CNN,
uint8 frames end to end) cut to ``--max_actor_steps``: actors run the int8 conv package, their
experience goes through the replay table (DQN) or the unroll queue (PPO, A2C), the learner
updates and publishes, and the evaluator plays full games. Runs land in
``<out_dir>/<agent>_<game>`` (finished ones are reused, interrupted ones resumed):

    python -m experiments.pixel_pipeline --agents=ppo,dqn --out_dir=runs/pixel_pipeline

Writes ``pixel_pipeline.md`` and ``pixel_pipeline.json``: per run, env steps, learner steps,
publishes, evaluations, package bytes and the actor's env steps/s with its inference share.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import ml_collections
from absl import flags

from actorq.analysis.report import json_safe
from actorq.analysis.speedup import read_json_object
from actorq.command_line import bad_input, check_writable_dir, run_absl
from actorq.envs.registry import is_pixel, tasks_of_family
from actorq.metrics.machine import machine_name
from launchpad_programs.launch import check_config
from launchpad_programs.study_runs import run_or_load

AGENTS = ("ppo", "dqn", "a2c")

_AGENTS = flags.DEFINE_list("agents", ["ppo", "dqn"], f"agents to run ({', '.join(AGENTS)})")
_TASKS = flags.DEFINE_list("tasks", list(tasks_of_family("atari")), "pixel tasks (games)")
_STEPS = flags.DEFINE_integer("max_actor_steps", 4096, "env steps per run")
_QUANTIZER = flags.DEFINE_string("quantizer", "int8", "the actors' quantizer")
_OUT_DIR = flags.DEFINE_string("out_dir", "runs/pixel_pipeline", "where the runs and tables go")


def pipeline_config(agent: str, task: str, max_actor_steps: int,
                    quantizer: str) -> ml_collections.ConfigDict:
    """The agent's preset for ``task``, cut to ``max_actor_steps`` with two evaluations of one
    full game each; DQN starts learning after 1/4 of the budget instead of its preset's 80k."""
    module = importlib.import_module(f"configs.{agent}_actorq")
    config = module.get_config(task)
    config.max_actor_steps = int(max_actor_steps)
    config.quantizer = quantizer
    config.eval_every_steps = max(int(max_actor_steps) // 2, 1)
    config.eval_episodes = 1
    config.track_energy = False
    if config.replay.rate_limiter != "queue":
        config.replay.min_size = max(int(max_actor_steps) // 4, int(config.learner.batch_size))
    return config


def summarize_run(agent: str, task: str, run_dir: Path) -> dict[str, Any]:
    """One table row from a finished run's summary, evaluations and actor breakdown."""
    summary = read_json_object(run_dir / "summary.json")
    evals = [json.loads(line) for line in (run_dir / "eval.jsonl").read_text().splitlines()
             if line.strip()]
    actor = read_json_object(run_dir / "breakdown.json")["actor_0"]
    return {
        "agent": agent,
        "task": task,
        "run_dir": str(run_dir),
        "env_steps": summary["actor_steps"],
        "learner_steps": summary["learner_steps"],
        "publishes": summary["num_publishes"],
        "evaluations": len(evals),
        "last_eval_return": evals[-1]["eval_return"] if evals else None,
        "package_bytes": summary["package_bytes"],
        "env_steps_per_s": actor["env_steps_per_s"],
        "inference_fraction": actor["inference_fraction"],
        "inference_mean_ms": actor["inference_mean_ms"],
        "wall_time_s": summary["wall_time_s"],
    }


def write_table(rows: list[dict[str, Any]], out_dir: Path) -> str:
    """Writes ``pixel_pipeline.md``/``.json``; returns the markdown."""
    lines = [
        f"Machine: {machine_name()}",
        "",
        "| agent | game | env steps | learner steps | publishes | evaluations (last return) "
        "| int8 package (bytes) | actor env steps/s | inference share | inference ms/call |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        last = "-" if r["last_eval_return"] is None else f"{r['last_eval_return']:g}"
        lines.append(
            f"| {r['agent']} | {r['task']} | {r['env_steps']} | {r['learner_steps']} "
            f"| {r['publishes']} | {r['evaluations']} ({last}) | {r['package_bytes']} "
            f"| {r['env_steps_per_s']:.0f} | {r['inference_fraction']:.0%} "
            f"| {r['inference_mean_ms']:.2f} |")
    text = "\n".join(lines) + "\n"
    (out_dir / "pixel_pipeline.md").write_text(text)
    (out_dir / "pixel_pipeline.json").write_text(
        json.dumps(json_safe({"machine": machine_name(), "runs": rows}), indent=2))
    return text


def main(argv: list[str]) -> None:
    del argv
    agents, tasks = list(_AGENTS.value), list(_TASKS.value)
    out_dir = Path(_OUT_DIR.value)
    with bad_input():
        for agent in agents:
            if agent not in AGENTS:
                raise ValueError(f"--agents: unknown agent {agent!r}; valid: {', '.join(AGENTS)}")
        for task in tasks:
            if not is_pixel(task):  # unknown names fail here too, listing the tasks
                raise ValueError(f"--tasks: {task!r} is not a pixel task (Atari or MinAtar)")
        if _STEPS.value < 1:
            raise ValueError(f"--max_actor_steps must be >= 1, got {_STEPS.value}")
        configs = {(agent, task): pipeline_config(agent, task, _STEPS.value, _QUANTIZER.value)
                   for agent in agents for task in tasks}
        for config in configs.values():
            check_config(config)
        check_writable_dir(out_dir, "--out_dir")
    rows = []
    for (agent, task), config in configs.items():
        print(f"{agent} {task}: {_STEPS.value} steps", flush=True)
        rows.append(summarize_run(agent, task, run_or_load(config, out_dir / f"{agent}_{task}")))
    print(write_table(rows, out_dir))


if __name__ == "__main__":
    run_absl(main)
