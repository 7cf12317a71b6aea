"""Actor throughput per quantizer and runtime, measured the way a distributed run acts.

    python -m benchmarks.actor_throughput [--task=walker_stand] [--steps=2000]
        [--quantizers=fp32,int8] [--runtime=xla,onnxruntime,onnxruntime_fused]
        [--hidden=2048,2048,2048]
        [--pull_period=1000] [--republish_every_s=0.25] [--rounds=1] [--envs_per_actor=1]
        [--json_out=FILE]

For each quantizer x runtime it launches a two-node program on the local launcher: ONE actor
node exactly as ActorQ runs it (``actorq_program.ActorNode`` in its own process: 'spawn',
single-threaded XLA, the agent's exploration and n-step adder, experience chunks sent over a
pipe) running the paper-size policy (random init: throughput does not depend on training) on
``--task``, and a probe node in this process that plays the learner
(:class:`ThroughputProbe`): it serves the package through the shared-memory weights channel and
republishes it
under a new version every ``--republish_every_s`` so that every pull (every ``--pull_period``
steps) really fetches, deserializes and loads the package.

Reported per configuration: env steps/s while acting (first action to last step), the runtime
breakdown per step (inference / env / pull / deserialize / load, ms), bytes per pull, actor
start-up (process start to first action) and the actor's peak RSS; then the int8/fp32 steps/s
ratio per runtime, and for the fastest int8 vs the fastest fp32 configuration what bounds that
ratio (:func:`ratio_bounds`: in-loop inference ratio vs package bytes ratio, effective weight
stream GB/s, the rest of the step, and the ceilings those imply). Configurations run one after
another in one invocation (``--rounds`` repeats them interleaved and keeps each one's fastest
round): compare ratios within a run, absolute numbers drift with machine load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from actorq.bounds import LAYER_SIZES, NON_NEGATIVE, NON_NEGATIVE_INT, POSITIVE_INT
from actorq.command_line import ArgumentParser, check_args, check_choices


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    names = lambda s: [v for v in s.split(",") if v]  # noqa: E731
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="walker_stand")
    p.add_argument("--steps", type=int, default=2000, help="actor steps per configuration")
    p.add_argument("--quantizers", type=names, default=["fp32", "int8"])
    p.add_argument("--runtime", "--runtimes", dest="runtimes", type=names,
                   default=["xla", "onnxruntime", "onnxruntime_fused"])
    p.add_argument("--hidden", type=lambda s: tuple(int(v) for v in s.split(",") if v),
                   default=(2048, 2048, 2048), help="policy hidden sizes")
    p.add_argument("--pull_period", type=int, default=1000)
    p.add_argument("--republish_every_s", type=float, default=0.25,
                   help="republish the package under a new version this often (0: never)")
    p.add_argument("--republish_every_pull", action="store_true",
                   help="instead of on a timer, publish a new version before each of the actor's "
                        "pulls, holding the actor at mid-period with the rate limiter's step "
                        "limit until it is out: every pull fetches new bytes on any machine "
                        "(blocked time is left out of steps/s)")
    p.add_argument("--rounds", type=int, default=1,
                   help="run every configuration this many times, interleaved; keep each one's "
                        "fastest round (interference from other load only ever slows a round)")
    p.add_argument("--envs_per_actor", type=int, default=1,
                   help="environments per actor, stepped with one batched policy call")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json_out", default="", help="also write the results as JSON here")
    args = p.parse_args(argv)
    check_args(p, args, {"steps": POSITIVE_INT, "hidden": LAYER_SIZES,
                         "pull_period": POSITIVE_INT, "republish_every_s": NON_NEGATIVE,
                         "rounds": POSITIVE_INT, "envs_per_actor": POSITIVE_INT,
                         "seed": NON_NEGATIVE_INT})
    check_choices(p, args.task, args.quantizers, args.runtimes)
    return args


def make_config(task: str, hidden: tuple[int, ...], quantizer: str, runtime: str, steps: int,
                pull_period: int, seed: int, envs_per_actor: int = 1) -> Any:
    """The experiment config of ``task``'s preset (D4PG for DMC, DQN for Gym and pixel tasks;
    pixel tasks keep their preset's conv network, ``hidden`` applies to the others)."""
    from actorq.envs.registry import tasks_of_family
    from configs import d4pg_actorq, dqn_actorq

    pixel_tasks = [*tasks_of_family("atari"), *tasks_of_family("minatar")]
    if task in d4pg_actorq.PRESETS:
        config = d4pg_actorq.get_config(task)
        config.learner.policy_hidden_sizes = hidden
    elif task in dqn_actorq.PRESETS:
        config = dqn_actorq.get_config(task)
        config.learner.hidden_sizes = hidden
    elif task in pixel_tasks:
        config = dqn_actorq.get_config(task)
    else:
        valid = ", ".join(sorted([*d4pg_actorq.PRESETS, *dqn_actorq.PRESETS, *pixel_tasks]))
        raise SystemExit(f"unknown task {task!r}; valid: {valid}")
    config.quantizer = quantizer
    config.actor_runtime = runtime
    config.max_actor_steps = steps
    config.pull_period = pull_period
    config.num_actors = 1
    config.envs_per_actor = envs_per_actor
    config.seed = seed
    config.launcher = "local"
    return config


class ThroughputProbe:
    """The main node of the benchmark program: plays the learner. It publishes one package,
    republishes it under new versions (on a timer, or before each of the actor's pulls while
    holding the actor at mid-period with the counter's limit) and gathers the actor's
    experience count, readiness and reports."""

    def __init__(self, ctx: Any, package: bytes, precision: str, period: int,
                 republish_every_s: float, republish_every_pull: bool) -> None:
        self._ctx = ctx
        self._weights = ctx.variable("weights")
        self._counter = ctx.counter("steps")
        self._experience, self._logs = ctx.stream("experience"), ctx.stream("logs")
        self._package, self._precision = package, precision
        self._period, self._every_s, self._every_pull = period, republish_every_s, \
            republish_every_pull
        self._version = 1
        self._weights.publish(precision, self._version, package)
        self._limit = period // 2
        if republish_every_pull:
            self._counter.set_limit(self._limit)
        self._last_publish = time.perf_counter()
        self.transitions = 0
        self.report: dict[str, Any] | None = None
        self.ready: dict[str, Any] | None = None
        self.error: str | None = None

    def _take(self) -> bool:
        arrived = False
        for _, chunk in self._experience.receive():
            arrived = True
            self.transitions += len(chunk["reward"])
        for _, (kind, payload) in self._logs.receive():
            arrived = True
            if kind == "report":
                self.report = payload
        for event in self._ctx.events():
            arrived = True
            if event["event"] == "ready":
                self.ready = event
            elif event["event"] == "error":
                self.error = event["traceback"].strip().splitlines()[-1]
        return arrived

    def _republish(self) -> None:
        self._version += 1
        self._weights.publish(self._precision, self._version, self._package)

    def step(self) -> str:
        arrived = self._take()
        if self._every_pull:
            if self._counter.slots()[0] >= self._limit:
                self._republish()  # the actor waits before its next pull: give it a new version
                self._limit += self._period
                self._counter.set_limit(self._limit)
        elif self._every_s > 0 and time.perf_counter() - self._last_publish >= self._every_s:
            self._republish()
            self._last_publish = time.perf_counter()
        if not arrived and (self.error or self._ctx.finished(("actor_0",))):
            return "finished"
        return "worked" if arrived else "idle"

    def close(self, interrupted: bool) -> ThroughputProbe:
        del interrupted
        self._take()
        return self


# Observations of a random-action rollout that calibrate the package (the learner calibrates on
# a replay batch; int8 conv packages get their static codes from them).
CALIBRATION_ROWS = 32


def random_observations(task: str, count: int, seed: int) -> Any:
    """``count`` observations of a seeded uniform-random-action rollout of ``task``."""
    import numpy as np

    from actorq.envs import make_environment

    env = make_environment(task, seed=seed)
    spec, rng = env.action_spec(), np.random.default_rng(seed)
    observations = []
    timestep = env.reset()
    try:
        while len(observations) < count:
            observations.append(np.asarray(timestep.observation))
            if hasattr(spec, "num_values"):
                action = int(rng.integers(spec.num_values))
            else:
                # bounds may be 0-d arrays (dm_control): the shape comes from the spec
                action = rng.uniform(spec.minimum, spec.maximum, spec.shape).astype(spec.dtype)
            timestep = env.step(action)
            if timestep.last():
                timestep = env.reset()
    finally:
        env.close()
    return np.stack(observations)


def measure(config: Any, republish_every_s: float,
            republish_every_pull: bool = False) -> dict[str, Any]:
    """Runs one actor process against a fixed package, republished every
    ``republish_every_s`` or (``republish_every_pull``) before each of the actor's pulls."""
    import jax
    import numpy as np

    from actorq.quantization import make_quantizer
    from launchpad_programs import nodes
    from launchpad_programs.actorq_program import ActorNode
    from launchpad_programs.launchers import launch
    from launchpad_programs.program import Channel, Node, Program
    from launchpad_programs.thread_env import SINGLE_THREAD_ENV
    from launchpad_programs.workers import peak_rss_mib

    builder = nodes.make_builder_for(config)
    network = builder.policy_network
    shape = builder.observation_spec.shape
    pixels = len(shape) == 3
    params = network.init(jax.random.key(config.seed),
                          np.zeros((1, *shape), np.uint8) if pixels
                          else np.zeros((1, builder.observation_size), np.float32))
    quantizer = make_quantizer(config.quantizer)
    if hasattr(quantizer, "with_calibration"):  # as the learner calibrates: visited states
        observations = random_observations(config.task, CALIBRATION_ROWS, config.seed)
        quantizer = quantizer.with_calibration(
            observations.reshape(len(observations), *(shape if pixels else (-1,))))
    package = quantizer.quantize(params, network, 1).to_bytes()
    # The actor node exactly as the ActorQ program runs it, under a probe instead of a learner.
    program = Program(
        name="actor_throughput",
        nodes=(Node("probe", ThroughputProbe, main=True,
                    kwargs={"package": package, "precision": str(config.quantizer),
                            "period": int(config.pull_period),
                            "republish_every_s": republish_every_s,
                            "republish_every_pull": republish_every_pull}),
               Node("actor_0", ActorNode, kind="actor", env=SINGLE_THREAD_ENV,
                    kwargs={"config": config, "index": 0, "num_actors": 1,
                            "chunk_size": 64})),
        channels=(Channel("weights", "variable", ("probe",), ("actor_0",)),
                  Channel("experience", "stream", ("actor_0",), ("probe",)),
                  Channel("logs", "stream", ("actor_0",), ("probe",)),
                  Channel("steps", "counter", ("actor_0",), ("probe",),
                          max_total=int(config.max_actor_steps), gauges=("learner_steps",))),
    )
    probe = launch(program, "local", shutdown_timeout=30.0)
    report, ready, error, transitions = probe.report, probe.ready, probe.error, probe.transitions
    if error is not None or report is None or ready is None or not report.get("final"):
        return {"error": error or "the actor stopped before its final report"}
    from actorq.runtime.breakdown import SECTIONS

    # Steady state: everything after the first action (whose step includes the first pull,
    # load and, for XLA, compilation; those are in start-up).
    first = ready["first_step"]
    seconds = {s: report["breakdown"]["seconds"][s] - first["breakdown"]["seconds"][s]
               for s in SECTIONS}
    steps = int(report["steps"]) - int(first["steps"])
    # Time held at the step limit (--republish_every_pull) is not acting.
    acting_s = report["time"] - first["time"] - seconds["blocked"]
    pulls = int(report["num_pulls"]) - int(first["num_pulls"])
    pulled = report["breakdown"]["bytes_pulled"] - first["breakdown"]["bytes_pulled"]
    return {
        "steps": steps,
        "steps_per_s": steps / acting_s if acting_s > 0 else float("nan"),
        **{f"{s}_ms_per_step": 1000.0 * seconds[s] / max(steps, 1) for s in SECTIONS},
        "num_pulls": pulls,
        "bytes_per_pull": pulled / max(pulls, 1),
        "package_bytes": len(package),
        "startup_s": float(ready["startup_s"]),
        "peak_rss_mib": float(report["peak_rss_mib"]),
        "parent_peak_rss_mib": peak_rss_mib(),  # this process: JAX and the learner's network
        "imports_jax": bool(report.get("imports_jax")),
        "envs_per_actor": int(config.envs_per_actor),
        "transitions_sent": transitions,
    }


def ratio_bounds(fp32: dict[str, Any], int8: dict[str, Any]) -> dict[str, float]:
    """What limits the int8/fp32 steps/s ratio, from two :func:`measure` results.

    A batch-1 forward pass reads every weight once, so inference streams the package's bytes
    from memory each step. Returns (ms are per actor step):
      ``ratio``: int8/fp32 steps/s as measured.
      ``inference_ratio``: fp32/int8 inference ms in the loop; ``bytes_ratio``: fp32/int8
        package bytes (the bound on ``inference_ratio`` when both stream at the same GB/s).
      ``fp32_gbps``, ``int8_gbps``: package bytes / time per policy call (effective weight
        stream; a call serves ``envs_per_actor`` steps).
      ``fp32_rest_ms``, ``int8_rest_ms``: step time not spent in inference (env, exploration,
        adder, experience, timers).
      ``ceiling_free_inference``: the ratio if int8 inference took no time at all.
      ``ceiling_bytes``: the ratio if int8 inference took fp32's time / ``bytes_ratio``.
    """
    step = {q: 1000.0 / r["steps_per_s"] for q, r in (("fp32", fp32), ("int8", int8))}
    inference = {q: r["inference_ms_per_step"] for q, r in (("fp32", fp32), ("int8", int8))}
    # With k environments per actor one policy call (one pass over the weights) serves k steps.
    call_ms = {q: inference[q] * r.get("envs_per_actor", 1)
               for q, r in (("fp32", fp32), ("int8", int8))}
    rest = {q: step[q] - inference[q] for q in step}
    bytes_ratio = fp32["package_bytes"] / int8["package_bytes"]
    return {
        "ratio": step["fp32"] / step["int8"],
        "inference_ratio": inference["fp32"] / inference["int8"],
        "bytes_ratio": bytes_ratio,
        "fp32_gbps": fp32["package_bytes"] / call_ms["fp32"] / 1e6,
        "int8_gbps": int8["package_bytes"] / call_ms["int8"] / 1e6,
        "fp32_rest_ms": rest["fp32"],
        "int8_rest_ms": rest["int8"],
        "ceiling_free_inference": step["fp32"] / rest["int8"],
        "ceiling_bytes": step["fp32"] / (inference["fp32"] / bytes_ratio + rest["int8"]),
    }


def print_ratio_bounds(fp32: dict[str, Any], int8: dict[str, Any]) -> None:
    """Prints :func:`ratio_bounds` for the fastest fp32 and fastest int8 configuration."""
    b = ratio_bounds(fp32, int8)
    print(f"\nfastest int8 ({int8['runtime']}) / fastest fp32 ({fp32['runtime']}): "
          f"{b['ratio']:.2f}x env steps/s")
    print(f"  inference in the loop: fp32/int8 = {b['inference_ratio']:.2f}x "
          f"(package bytes ratio {b['bytes_ratio']:.2f}x); weights stream at "
          f"{b['fp32_gbps']:.1f} GB/s (fp32) and {b['int8_gbps']:.1f} GB/s (int8)")
    print(f"  rest of the step (env, exploration, adder, experience): "
          f"fp32 {b['fp32_rest_ms']:.3f} ms, int8 {b['int8_rest_ms']:.3f} ms")
    print(f"  ceilings: {b['ceiling_bytes']:.2f}x if int8 inference were exactly "
          f"{b['bytes_ratio']:.2f}x faster than fp32's, {b['ceiling_free_inference']:.2f}x if it "
          f"took no time at all")


def _mib(n: float) -> str:
    return f"{n / 2**20:.2f} MiB"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from actorq.runtime.policy_runtime import available_runtimes

    runtimes = []
    for runtime in args.runtimes:
        if runtime in available_runtimes():
            runtimes.append(runtime)
        else:
            print(f"note: skipping runtime {runtime!r}: not available "
                  f"(available: {', '.join(available_runtimes())})")
    from actorq.envs import task_family

    policy = ("the preset's conv network" if task_family(args.task) in ("atari", "minatar")
              else f"hidden={'x'.join(map(str, args.hidden))}")
    print(f"actor throughput: task={args.task} policy {policy} "
          f"steps={args.steps} pull_period={args.pull_period} "
          f"republish every {args.republish_every_s} s, one single-threaded actor process "
          f"with {args.envs_per_actor} environment(s) "
          f"(cpu: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f})")
    if args.rounds < 1:
        raise SystemExit(f"--rounds must be >= 1, got {args.rounds}")
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for round_ in range(args.rounds):
        for runtime in runtimes:
            for quantizer in args.quantizers:
                config = make_config(args.task, args.hidden, quantizer, runtime, args.steps,
                                     args.pull_period, args.seed, args.envs_per_actor)
                start = time.perf_counter()
                result = {"quantizer": quantizer, "runtime": runtime, "round": round_ + 1,
                          **measure(config, args.republish_every_s, args.republish_every_pull)}
                print(f"  round {round_ + 1}/{args.rounds} {quantizer}/{runtime}: "
                      f"{result.get('steps_per_s', float('nan')):.1f} steps/s, "
                      f"done in {time.perf_counter() - start:.1f} s", flush=True)
                best = results.get((quantizer, runtime))
                if best is None or "error" in best or (
                        "error" not in result and result["steps_per_s"] > best["steps_per_s"]):
                    results[(quantizer, runtime)] = result

    header = ("| quantizer | runtime | steps/s | inference ms | env ms | pull ms | deserialize ms "
              "| load ms | pulls | bytes/pull | start-up s | peak RSS MiB | imports JAX |")
    print()
    print(header)
    print("|" + "|".join(["---"] * 2 + ["---:"] * 10 + ["---"]) + "|")
    for (quantizer, runtime), r in results.items():
        if "error" in r:
            print(f"| {quantizer} | {runtime} | failed: {r['error']} |")
            continue
        print(f"| {quantizer} | {runtime} | {r['steps_per_s']:.1f} "
              f"| {r['inference_ms_per_step']:.3f} | {r['env_ms_per_step']:.3f} "
              f"| {r['pull_ms_per_step']:.4f} | {r['deserialize_ms_per_step']:.4f} "
              f"| {r['load_ms_per_step']:.4f} | {r['num_pulls']} | {_mib(r['bytes_per_pull'])} "
              f"| {r['startup_s']:.1f} | {r['peak_rss_mib']:.0f} "
              f"| {'yes' if r['imports_jax'] else 'no'} |")
    print("(steady state after the first action; per-step ms = section time / actor steps; "
          f"pull/deserialize/load happen every {args.pull_period} steps)")
    print()
    ok = {key: r for key, r in results.items() if "error" not in r}
    for runtime in runtimes:
        fp32, int8 = ok.get(("fp32", runtime)), ok.get(("int8", runtime))
        if fp32 and int8:
            print(f"{runtime}: int8/fp32 steps/s = {int8['steps_per_s'] / fp32['steps_per_s']:.2f}x"
                  f", fp32/int8 package bytes = "
                  f"{fp32['package_bytes'] / int8['package_bytes']:.2f}x")
    best = {q: max((r for (quantizer, _), r in ok.items() if quantizer == q),
                   key=lambda r: r["steps_per_s"], default=None) for q in ("fp32", "int8")}
    if best["fp32"] and best["int8"]:
        print_ratio_bounds(best["fp32"], best["int8"])
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({f"{q}/{r}": v for (q, r), v in results.items()}, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
