"""Actor processes stay small: with an ONNX Runtime runtime they never import JAX or Flax.

The learner side, the quantizers and the ``xla`` runtime need JAX. An actor or evaluator only
deserializes packages, runs them and steps environments, so importing JAX there (~200 MiB and
~2 s per process) would be pure overhead. These run the actor's code path in a fresh
interpreter and check ``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]

ACTOR = """
import json, sys, time
start = time.perf_counter()
from launchpad_programs import nodes, workers
from configs import {module}

config = {module}.get_config({preset!r})
config.actor_runtime = {runtime!r}
config.envs_per_actor = 2
package = open({package!r}, "rb").read()

class Source:
    def latest(self):
        return 1, package

builder = nodes.make_builder_for(config)
worker = workers.ActorWorker(config, builder, 0, 1, Source(), send_chunk=lambda chunk: None)
for _ in range(20):
    worker.step()
config.eval_episodes = 1
version, returns = nodes.Evaluator(config, builder).run(Source())
print(json.dumps({{"jax": "jax" in sys.modules, "flax": "flax" in sys.modules,
                   "steps": worker.steps, "version": version, "returns": len(returns),
                   "seconds": time.perf_counter() - start}}))
"""


def run_actor(tmp_path: Path, agent: str, runtime: str) -> dict:
    from configs import d4pg_actorq, dqn_actorq
    from launchpad_programs import nodes

    module, preset = {"dqn": ("dqn_actorq", "cartpole_small"),
                      "d4pg": ("d4pg_actorq", "cartpole_balance_small")}[agent]
    config = {"dqn_actorq": dqn_actorq, "d4pg_actorq": d4pg_actorq}[module].get_config(preset)
    builder = nodes.make_builder_for(config)
    network = builder.policy_network
    params = network.init(jax.random.key(0), np.zeros((1, builder.observation_size), np.float32))
    from actorq.quantization import make_quantizer

    package = tmp_path / f"{agent}.pkg"
    package.write_bytes(make_quantizer("int8").quantize(params, network, 1).to_bytes())
    code = ACTOR.format(module=module, preset=preset, runtime=runtime, package=str(package))
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("agent", ["dqn", "d4pg"])
@pytest.mark.parametrize("runtime", ["onnxruntime", "onnxruntime_fused"])
def test_onnx_actor_and_evaluator_never_import_jax(tmp_path, agent, runtime):
    report = run_actor(tmp_path, agent, runtime)
    assert report["steps"] == 40 and report["version"] == 1 and report["returns"] == 1
    assert not report["jax"] and not report["flax"], report


def test_xla_actor_does_import_jax(tmp_path):
    """The check above can fail: the xla runtime needs JAX and imports it."""
    report = run_actor(tmp_path, "dqn", "xla")
    assert report["jax"] and report["steps"] == 40


def _child_peak_rss(queue) -> None:
    from launchpad_programs.workers import peak_rss_mib

    queue.put(peak_rss_mib())


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_peak_rss_of_a_spawned_child_is_its_own():
    """``ru_maxrss`` would report the parent's RSS at the fork (it survives exec)."""
    import multiprocessing

    from launchpad_programs.workers import peak_rss_mib

    ballast = np.ones(400 * 2**20, np.uint8)  # make this process clearly bigger than a child
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_child_peak_rss, args=(queue,))
    child.start()
    child_peak = queue.get(timeout=120)
    child.join(60)
    # Holds on any machine: this process touched 400 MiB of ballast the child never had, so
    # its own peak exceeds the child's by at least that much.
    assert peak_rss_mib() > 400 + child_peak, (peak_rss_mib(), child_peak)
    del ballast


def test_xla_accepts_the_actor_flags():
    """XLA refuses to start on an unknown flag in XLA_FLAGS; an actor process on the xla runtime
    must come up with exactly the environment the launchers give it."""
    import os
    import subprocess
    import sys

    from launchpad_programs.thread_env import SINGLE_THREAD_ENV

    code = "import jax, jax.numpy as jnp; print(float(jax.jit(lambda x: x.sum())(jnp.ones(3))))"
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, **SINGLE_THREAD_ENV},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "3.0"
