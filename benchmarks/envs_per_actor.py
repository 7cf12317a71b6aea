"""Several environments per actor: one batched policy call per step of all of them.

    python -m benchmarks.envs_per_actor [--task=walker_stand] [--envs=1,4,8]
        [--quantizers=fp32,int8] [--runtime=onnxruntime_fused] [--steps=2400] [--repeats=2]

One of the leads for faster int8 actors is to give each actor K environments so that its policy
runs at batch K. This measures that option in one process pinned to one core (as an actor): the
loop is batched inference + Gaussian exploration + stepping the K environments
(``actorq.envs.BatchedEnvironment``); no adder or experience channel, so absolute numbers sit a
little above ``benchmarks.actor_throughput``'s. fp32 and int8 run through the same runtime (the
fused runtime runs fp32 packages on the exact ONNX Runtime graph, the fastest fp32 path).

Reported per K: env steps/s (all K environments together) for each quantizer, the int8/fp32 ratio,
and ms per policy call. Configurations are interleaved over ``--repeats`` rounds and the best
round is kept, so load drift hits every configuration alike.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from actorq.bounds import LAYER_SIZES, NON_NEGATIVE, NON_NEGATIVE_INT, POSITIVE_INT, Bounds
from actorq.command_line import ArgumentParser, check_args, check_choices
from launchpad_programs.thread_env import set_thread_env


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    names = lambda s: [v for v in s.split(",") if v]  # noqa: E731
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="walker_stand")
    p.add_argument("--envs", type=lambda s: [int(v) for v in names(s)], default=[1, 4, 8],
                   help="environments per actor (the policy's batch size)")
    p.add_argument("--quantizers", type=names, default=["fp32", "int8"])
    p.add_argument("--runtime", default="onnxruntime_fused")
    p.add_argument("--hidden", type=lambda s: tuple(int(v) for v in names(s)),
                   default=(2048, 2048, 2048), help="policy hidden sizes")
    p.add_argument("--steps", type=int, default=2400,
                   help="env steps per configuration and round (all environments together)")
    p.add_argument("--repeats", type=int, default=2, help="interleaved rounds (best is kept)")
    p.add_argument("--sigma", type=float, default=0.3, help="exploration noise")
    p.add_argument("--cpu", type=int, default=-2,
                   help="pin to this CPU; -2 = the last allowed CPU, -1 = do not pin")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json_out", default="")
    args = p.parse_args(argv)
    check_args(p, args, {"envs": LAYER_SIZES, "hidden": LAYER_SIZES, "steps": POSITIVE_INT,
                         "repeats": POSITIVE_INT, "sigma": NON_NEGATIVE,
                         "cpu": Bounds(low=-2, integer=True), "seed": NON_NEGATIVE_INT})
    check_choices(p, args.task, args.quantizers, [args.runtime])
    return args


def run_loop(env: Any, runtime: Any, steps: int, sigma: float, seed: int) -> dict[str, float]:
    """Acts for about ``steps`` env steps on the batched ``env``; returns rates and call times."""
    import numpy as np

    rng = np.random.default_rng(seed)
    k = env.num_envs
    timestep = env.reset()
    for _ in range(3):  # warm-up: first calls allocate
        runtime(timestep.observation)
    calls = max(1, steps // k)
    inference = 0.0
    start = time.perf_counter()
    for _ in range(calls):
        t0 = time.perf_counter()
        outputs = runtime(timestep.observation)
        inference += time.perf_counter() - t0
        actions = np.clip(outputs + rng.normal(scale=sigma, size=outputs.shape), -1.0, 1.0)
        timestep = env.step(actions.astype(np.float32))
    elapsed = time.perf_counter() - start
    return {
        "env_steps_per_s": calls * k / elapsed,
        "ms_per_call": 1000.0 * inference / calls,
        "inference_ms_per_env_step": 1000.0 * inference / (calls * k),
        "ms_per_env_step": 1000.0 * elapsed / (calls * k),
    }


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    set_thread_env(1)
    if args.cpu != -1 and hasattr(os, "sched_setaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {allowed[-1] if args.cpu == -2 else args.cpu})

    import jax
    import numpy as np

    from actorq.envs import make_environment
    from actorq.envs.batched import BatchedEnvironment
    from actorq.networks import make_policy_network
    from actorq.quantization import make_quantizer
    from actorq.runtime.policy_runtime import make_policy_runtime

    probe = make_environment(args.task, seed=args.seed)
    obs_size = int(np.prod(probe.observation_spec().shape))
    act_size = int(np.prod(probe.action_spec().shape))
    network = make_policy_network(act_size, args.hidden)
    params = network.init(jax.random.key(args.seed), np.zeros((1, obs_size), np.float32))
    runtimes = {}
    for spec in args.quantizers:
        runtime = make_policy_runtime(args.runtime)
        runtime.load(make_quantizer(spec).quantize(params, network, 1))
        runtimes[spec] = runtime
    envs = {k: BatchedEnvironment([make_environment(args.task, seed=args.seed + i)
                                   for i in range(k)]) for k in args.envs}
    print(f"envs per actor: task={args.task} policy {obs_size} -> "
          f"{'x'.join(map(str, args.hidden))} -> {act_size}, runtime={args.runtime}, one thread, "
          f"{args.steps} env steps x {args.repeats} rounds (load {os.getloadavg()[0]:.2f})",
          flush=True)
    best: dict[tuple[int, str], dict[str, float]] = {}
    for round_ in range(args.repeats):
        for k in args.envs:
            for spec in args.quantizers:
                r = run_loop(envs[k], runtimes[spec], args.steps, args.sigma, args.seed + round_)
                key = (k, spec)
                if key not in best or r["env_steps_per_s"] > best[key]["env_steps_per_s"]:
                    best[key] = r
        print(f"  round {round_ + 1}/{args.repeats} done", flush=True)

    print()
    print("| envs/actor | quantizer | env steps/s | ms per policy call | inference ms per env step "
          "| ms per env step |")
    print("|---:|---|---:|---:|---:|---:|")
    for (k, spec), r in best.items():
        print(f"| {k} | {spec} | {r['env_steps_per_s']:.0f} | {r['ms_per_call']:.3f} "
              f"| {r['inference_ms_per_env_step']:.3f} | {r['ms_per_env_step']:.3f} |")
    if "fp32" in args.quantizers:
        print()
        for spec in args.quantizers:
            if spec == "fp32":
                continue
            for k in args.envs:
                ratio = best[(k, spec)]["env_steps_per_s"] / best[(k, "fp32")]["env_steps_per_s"]
                print(f"envs/actor {k}: {spec}/fp32 env steps/s = {ratio:.2f}x")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({f"{k}/{spec}": r for (k, spec), r in best.items()}, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
