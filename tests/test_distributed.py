"""Distributed ActorQ: program graph, shared-memory weights, local and Ray launchers.

The launcher tests run real topologies (1 learner + 2 actor processes + evaluator) with tiny
networks; each takes 20-45 s on 2 cores (the whole file ~3 min), most of it process start-up
and XLA compilation. The Ray test is skipped when ray (an optional extra) is not installed.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import psutil
import pytest

from launchpad_programs.shared_policy import SharedPolicyPublisher, SharedPolicySource

REPO = Path(__file__).resolve().parents[1]
SHM_DIR = Path("/dev/shm")


# ----------------------------------------------------------------------------- helpers


def dqn_config(run_dir: Path, steps: int, num_actors: int = 2, launcher: str = "local"):
    """cartpole_small with the DQN settings pinned here (the preset may be retuned)."""
    from configs import dqn_actorq

    config = dqn_actorq.get_config("cartpole_small")
    config.launcher = launcher
    config.num_actors = num_actors
    config.run_dir = str(run_dir)
    config.max_actor_steps = steps
    config.track_energy = False
    config.seed = 0
    config.pull_period = 100
    config.eval_every_steps = 2000
    config.eval_episodes = 5
    config.checkpoint_every_steps = 5000
    config.log_every_seconds = 2.0
    config.replay.min_size = 500
    config.replay.samples_per_insert = 32.0
    learner = config.learner
    learner.hidden_sizes = (64, 64)
    learner.learning_rate = 1e-3
    learner.batch_size = 64
    learner.sgd_steps_per_call = 4
    learner.n_step = 3
    learner.discount = 0.99
    learner.target_update_period = 500
    learner.epsilon_decay_steps = 5000
    learner.epsilon_min = 0.01
    learner.epsilon_max = 0.1
    return config


def initial_policy_return(config) -> float:
    """The mean evaluation return of the policy a run with ``config`` starts from (version 0),
    evaluated as the run's evaluator does."""
    from launchpad_programs import nodes

    builder = nodes.make_builder_for(config)
    learner = nodes.make_learner(config, builder, nodes.make_table(config, builder))
    source = nodes.LearnerVariableSource(learner, builder, str(config.quantizer))
    version, returns = nodes.Evaluator(config, builder).run(source)
    assert version == 0
    return float(np.mean(returns))


def read_rows(path: Path) -> list[dict]:
    from actorq.metrics.loggers import read_jsonl

    return read_jsonl(path) if path.exists() else []


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_for(predicate, timeout: float, what: str, poll: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def ready_nodes(run_dir: Path) -> set[str]:
    return {e["node"] for e in read_rows(run_dir / "events.jsonl") if e.get("event") == "ready"}


def fake_package(tag: int, size: int) -> bytes:
    """Bytes shaped like a package: an 8-byte tag, a payload of one repeated byte, a crc32."""
    body = struct.pack("<q", tag) + bytes([tag % 251]) * (size - 8)
    return body + struct.pack("<I", zlib.crc32(body))


STRESS_TAGS = 64


def check_fake_package(version: int, data: bytes, size: int) -> str | None:
    """None if ``data`` is exactly the package published as ``version``, else what is wrong."""
    tag = version % STRESS_TAGS
    if len(data) != size + 4:
        return f"length {len(data)}"
    if struct.unpack("<q", data[:8])[0] != tag:
        return "header of another package"
    payload = np.frombuffer(data, np.uint8, count=size - 8, offset=8)
    if not (payload == tag % 251).all():
        return "torn: payload mixes packages"
    return None


def _stress_reader(name: str, size: int, count: int, verify_crc: bool, conn) -> None:
    """Child process: reads segment ``name`` until version ``count``; sends back statistics."""
    source = SharedPolicySource(name, verify_crc=verify_crc)
    conn.send("attached")
    reads, versions, problems = 0, set(), []
    last = -1
    deadline = time.monotonic() + 60
    while last < count and time.monotonic() < deadline:
        latest = source.latest()
        if latest is None:
            continue
        version, data = latest
        reads += 1
        problem = check_fake_package(version, data, size)
        if problem:
            problems.append(f"v{version}: {problem}")
        if version < last:
            problems.append(f"version went backwards: {last} -> {version}")
        last = version
        versions.add(version)
    conn.send({"reads": reads, "distinct": len(versions), "last": last,
               "retries": source.retries, "crc_failures": source.crc_failures,
               "problems": problems[:10]})
    source.close()


# ------------------------------------------------------------------------------ program


def test_program_lists_every_node_and_channel(tmp_path):
    from launchpad_programs.actorq_program import (
        ActorNode,
        EvaluatorNode,
        LearnerNode,
        make_program,
    )

    config = dqn_config(tmp_path / "run", steps=1000, num_actors=3)
    program = make_program(config)
    text = str(program)
    print(text)
    assert program.node_names == ("learner", "evaluator", "actor_0", "actor_1", "actor_2")
    for name in program.node_names:
        assert f"  {name}" in text
    for channel in ("weights", "experience", "logs", "steps"):
        assert f"  {channel}" in text
    # Nodes carry the code that builds them.
    assert program.main.make is LearnerNode and program.node("evaluator").make is EvaluatorNode
    assert all(n.make is ActorNode and n.restart for n in program.nodes_of("actor"))
    assert [n.kwargs["index"] for n in program.nodes_of("actor")] == [0, 1, 2]
    assert program.channel("weights").targets == ("actor_0", "actor_1", "actor_2", "evaluator")
    assert program.channel("experience").targets == ("learner",)
    steps = program.channel("steps")
    assert steps.kind == "counter" and steps.max_total == 1000
    assert program.slot_of("actor_2") == {"steps": 2}
    assert "int8" in text and "cartpole" in text


def test_single_launcher_program_has_one_actor(tmp_path):
    from launchpad_programs.actorq_program import make_program

    config = dqn_config(tmp_path / "run", steps=1000, num_actors=4, launcher="single")
    assert [n.name for n in make_program(config).nodes_of("actor")] == ["actor_0"]


def test_importing_launchers_does_not_import_ray_or_jax():
    code = ("import sys, launchpad_programs.launch, launchpad_programs.launchers.ray, "
            "launchpad_programs.launchers.local, launchpad_programs.actorq_program; "
            "assert 'ray' not in sys.modules; "
            "assert 'jax' not in sys.modules, 'children must set XLA flags before jax'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, timeout=60)


# ------------------------------------------------------------------------ shared memory


def test_shared_policy_round_trip_version_order_and_cleanup():
    from actorq.quantization.package import PolicyPackage, layers_from_arrays

    rng = np.random.default_rng(0)
    packages = [
        PolicyPackage("fp32", v, layers_from_arrays([rng.normal(size=(4, 8)).astype(np.float32)],
                                                    [np.zeros(8, np.float32)])).to_bytes()
        for v in range(4)
    ]
    publisher = SharedPolicyPublisher.for_package(packages[0])
    name = publisher.name
    try:
        source = SharedPolicySource(name)
        assert source.latest() is None and source.peek_version() == -1
        for version in (0, 1, 3):
            publisher.publish(version, packages[version])
            got_version, data = source.latest()
            assert got_version == version and data == packages[version]
            assert PolicyPackage.from_bytes(data).version == version
        assert source.latest() is source.latest()  # unchanged version: no new copy
        publisher.publish(3, packages[3])  # republishing the current version: no-op
        with pytest.raises(ValueError, match="backwards"):
            publisher.publish(2, packages[2])
        with pytest.raises(ValueError, match="capacity"):
            publisher.publish(4, b"x" * (publisher.capacity + 1))
        assert source.latest()[0] == 3
        source.close()
    finally:
        publisher.close()
    assert not (SHM_DIR / name).exists()
    with pytest.raises(FileNotFoundError):
        SharedPolicySource(name)
    publisher.close()  # idempotent


@pytest.mark.parametrize("verify_crc", [False, True])
def test_shared_policy_never_returns_a_torn_package(verify_crc):
    """This process republishes 256 KiB packages as fast as it can while a reader process
    copies them: every read is one complete package and versions never go backwards (with the
    crc check off, the seqlock alone guarantees it)."""
    size, count = 1 << 18, 20000
    packages = [fake_package(tag, size) for tag in range(STRESS_TAGS)]
    ctx = multiprocessing.get_context("spawn")
    with SharedPolicyPublisher(size + 64) as publisher:
        publisher.publish(0, packages[0])
        parent_end, child_end = ctx.Pipe()
        reader = ctx.Process(target=_stress_reader,
                             args=(publisher.name, size, count, verify_crc, child_end))
        reader.start()
        try:
            assert parent_end.poll(60) and parent_end.recv() == "attached"
            for version in range(1, count + 1):
                publisher.publish(version, packages[version % STRESS_TAGS])
            assert parent_end.poll(60)
            stats = parent_end.recv()
            reader.join(30)
        finally:
            if reader.is_alive():
                reader.kill()
    print(stats)
    assert reader.exitcode == 0
    assert not stats["problems"], stats["problems"]
    assert stats["last"] == count
    assert stats["distinct"] > 20, "the reader should have seen many versions"


def test_shared_policy_reader_skips_incomplete_and_corrupt_slots():
    """A slot marked as being written (odd seq) or failing its crc is never returned: the
    reader keeps the last good package."""
    from multiprocessing import shared_memory

    size = 4096
    with SharedPolicyPublisher(size + 64) as publisher:
        publisher.publish(1, fake_package(1, size))
        source = SharedPolicySource(publisher.name, max_retries=20)
        assert source.latest()[0] == 1
        publisher.publish(2, fake_package(2, size))
        raw = shared_memory.SharedMemory(name=publisher.name)
        header = np.ndarray((16,), np.int64, buffer=raw.buf)
        active = int(header[2])  # documented layout: [2] active slot, [4 + 4 s] slot s seq
        header[4 + 4 * active] += 1  # pretend the writer is mid-write
        assert source.latest()[0] == 1 and source.retries > 0
        header[4 + 4 * active] += 1  # complete again, but corrupt one payload byte
        data = np.ndarray((2, publisher.capacity), np.uint8, buffer=raw.buf, offset=128)
        data[active, 100] ^= 0xFF
        assert source.latest()[0] == 1 and source.crc_failures > 0
        data[active, 100] ^= 0xFF
        assert source.latest()[0] == 2
        del header, data
        raw.close()
        source.close()


def test_int8_packages_are_4x_smaller_than_fp32_per_pull(tmp_path):
    """Through the real weights channel (publisher -> shared memory -> VariableClient), an int8
    actor pulls >= 3.9x fewer bytes than an fp32 one (hidden 1024x1024: biases and per-channel
    scales stay float32, so small networks land just under 3.9x)."""
    import jax

    from actorq.quantization import make_quantizer
    from actorq.runtime.breakdown import RuntimeBreakdown
    from actorq.runtime.policy_runtime import make_policy_runtime
    from actorq.runtime.variable_client import VariableClient
    from launchpad_programs import nodes

    config = dqn_config(tmp_path / "run", steps=1000)
    config.learner.hidden_sizes = (1024, 1024)
    builder = nodes.make_builder_for(config)
    network = builder.policy_network
    params = network.init(jax.random.key(0), np.zeros((1, builder.observation_size), np.float32))
    per_pull = {}
    for spec in ("fp32", "int8"):
        package = make_quantizer(spec).quantize(params, network, 1).to_bytes()
        breakdown = RuntimeBreakdown()
        with SharedPolicyPublisher.for_package(package) as publisher:
            client = VariableClient(SharedPolicySource(publisher.name), make_policy_runtime("xla"),
                                    pull_period=1, breakdown=breakdown,
                                    expected_shape=(builder.observation_size, 2))
            publisher.publish(1, package)
            assert client.update(wait=True) and client.num_pulls == 1
            assert not client.update()  # nothing newer
        per_pull[spec] = breakdown.bytes_pulled / client.num_pulls
    ratio = per_pull["fp32"] / per_pull["int8"]
    print(f"bytes per pull: {per_pull}, fp32/int8 = {ratio:.3f}")
    assert ratio >= 3.9


# -------------------------------------------------------------------------- local launcher


def test_local_topology_learns_cartpole(tmp_path):
    from launchpad_programs.launch import run_experiment

    run = tmp_path / "run"
    config = dqn_config(run, steps=12000)
    # A publish every 500 learner steps (the rate limiter fixes ~5,750 of them): the default
    # (whenever stale, within ~10% of learner time) published 3 times on a loaded core, and the
    # evaluations up to 10k steps all scored the untrained policy.
    config.publish_period = 500
    summary = run_experiment(config)
    print(summary)
    evals = read_rows(run / "eval.jsonl")
    returns = [e["eval_return"] for e in evals]
    print("eval returns:", returns)
    assert not summary["interrupted"] and summary["actor_restarts"] == 0
    assert 12000 <= summary["actor_steps"] <= 12001  # actors may overshoot by num_actors - 1
    assert summary["learner_steps"] > 0 and summary["num_pulls"] >= 2
    assert summary["num_publishes"] >= summary["learner_steps"] // 500
    # Learned, by a margin: one greedy DQN evaluation swings by +-100 from one to the next
    # (a final 118.6 after 312.4 was seen), so the last three are averaged.
    assert max(returns) >= 200.0 and sum(returns[-3:]) / 3 >= 120.0
    for key in ("actor_steps", "learner_steps", "wall_time_s", "eval_return", "eval_return_std",
                "policy_version"):
        assert key in evals[-1]
    assert evals[-1]["policy_version"] == summary["learner_steps"]
    for name in ("config.json", "learner.jsonl", "actor_0.jsonl", "actor_1.jsonl",
                 "events.jsonl", "pids.json", "breakdown.md", "energy.json", "summary.json"):
        assert (run / name).exists(), name
    breakdown = json.loads((run / "breakdown.json").read_text())
    assert set(breakdown) == {"actor_0", "actor_1"}
    assert all(b["bytes_pulled"] > 0 and b["env_steps"] > 0 for b in breakdown.values())
    assert sum(b["env_steps"] for b in breakdown.values()) == summary["actor_steps"]
    learner_rows = read_rows(run / "learner.jsonl")
    assert learner_rows and "sample_policy_lag" in learner_rows[-1]
    assert learner_rows[-1]["sample_policy_lag"] >= 0
    episodes = read_rows(run / "actor_1.jsonl")
    assert episodes and [e["episode"] for e in episodes] == list(range(1, len(episodes) + 1))
    assert json.loads((run / "summary.json").read_text())["actor_steps"] == summary["actor_steps"]
    assert list((run / "checkpoints").glob("replay_*"))


def test_prioritized_dqn_trains_on_the_local_topology(tmp_path):
    """Prioritized replay under a multi-process launcher: the learner's warm-up call must not
    need the (still empty) table's size, and importance weights use the size at sample time."""
    from launchpad_programs.launch import run_experiment

    run = tmp_path / "run"
    config = dqn_config(run, steps=8000)
    config.learner.prioritized = True
    summary = run_experiment(config)
    assert not summary["interrupted"] and summary["learner_steps"] > 0
    losses = [row["loss"] for row in read_rows(run / "learner.jsonl")]
    assert losses and all(np.isfinite(losses))
    evals = read_rows(run / "eval.jsonl")
    print("eval (version, return):", [(e["policy_version"], e["eval_return"]) for e in evals])
    # Improvement is judged against the run's initial policy, evaluated here: which version
    # the first evaluation sees depends on how fast the processes start (a CI run's first
    # evaluation already saw a trained policy scoring 175).
    untrained = initial_policy_return(config)
    assert untrained < 50
    assert max(e["eval_return"] for e in evals if e["policy_version"] > 0) >= 100.0


def test_mixed_precision_fleet_on_the_local_launcher(tmp_path):
    """actor_quantizers gives each actor its own precision: the learner publishes one package
    per precision, each actor pulls its own, and the breakdown says who ran what."""
    from launchpad_programs.launch import run_experiment

    run = tmp_path / "run"
    config = dqn_config(run, steps=6000)
    config.actor_quantizers = "fp32,int8"
    summary = run_experiment(config)
    assert summary["actor_quantizers"] == ["fp32", "int8"] and not summary["interrupted"]
    breakdown = json.loads((run / "breakdown.json").read_text())
    assert breakdown["actor_0"]["precision"] == "fp32"
    assert breakdown["actor_1"]["precision"] == "int8"
    per_pull = {node: b["bytes_pulled"] / b["num_pulls"] for node, b in breakdown.items()}
    assert per_pull["actor_0"] > 2 * per_pull["actor_1"]  # fp32 packages are ~3x larger here
    table = (run / "breakdown.md").read_text()
    assert "| actor_0 | fp32 |" in table and "| actor_1 | int8 |" in table
    rows = read_rows(run / "learner.jsonl")
    assert "policy_drift_kl/int8" in rows[-1] and "policy_drift_kl/fp32" in rows[-1]


def test_killed_actor_is_restarted_and_rejoins(tmp_path):
    from launchpad_programs.launch import run_experiment

    run = tmp_path / "run"
    config = dqn_config(run, steps=25000)
    config.eval_every_steps = 100000  # no periodic evals: keep the CPUs for the actors
    killed: list[int] = []

    def kill_actor_0() -> None:
        wait_for(lambda: "actor_0" in ready_nodes(run), 120, "actor_0 to act")
        pid = json.loads((run / "pids.json").read_text())["actor_0"]
        # Mid-run, by an event: actor_0 has finished an episode (so it has sent experience).
        wait_for(lambda: read_rows(run / "actor_0.jsonl"), 120, "actor_0 to finish an episode")
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    killer = threading.Thread(target=kill_actor_0, daemon=True)
    killer.start()
    summary = run_experiment(config)
    killer.join(1)
    print(summary)
    assert killed and not alive(killed[0])
    assert summary["actor_restarts"] >= 1 and not summary["interrupted"]
    assert summary["actor_steps"] >= 25000
    restarts = [e for e in read_rows(run / "events.jsonl") if e.get("event") == "restart"]
    assert restarts and restarts[0]["node"] == "actor_0" and restarts[0]["exitcode"] == -9
    new_pid = json.loads((run / "pids.json").read_text())["actor_0"]
    assert new_pid != killed[0] and not alive(new_pid)
    breakdown = json.loads((run / "breakdown.json").read_text())["actor_0"]
    assert breakdown["incarnations"] == 2
    # The restarted actor rejoined with a trained policy (not version 0).
    rejoined = [e for e in read_rows(run / "actor_0.jsonl")
                if e["actor_steps"] > restarts[0]["actor_steps"]]
    assert rejoined and rejoined[0]["policy_version"] > 0


def _cli(run: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "experiments.dqn_actorq",
            "--config=configs/dqn_actorq.py:cartpole_small", f"--config.run_dir={run}",
            "--config.launcher=local", "--config.num_actors=2", "--config.track_energy=False",
            "--config.eval_every_steps=2000", "--config.replay.min_size=500", *extra]


def test_sigterm_stops_everything_and_resume_continues(tmp_path):
    from launchpad_programs.launch import run_experiment

    run = tmp_path / "run"
    process = subprocess.Popen(_cli(run, "--config.max_actor_steps=10000000"), cwd=REPO,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: {"actor_0", "actor_1"} <= ready_nodes(run), 150, "both actors to act")
        wait_for(lambda: read_rows(run / "actor_0.jsonl"), 60, "actor_0 episodes")
        # The evaluation at 2000 actor steps: past min_size, so the learner has stepped too.
        wait_for(lambda: len(read_rows(run / "eval.jsonl")) >= 2, 150, "the second evaluation")
        pids = json.loads((run / "pids.json").read_text())
        assert pids["learner"] == process.pid
        children = [pid for node, pid in pids.items() if node != "learner"]
        assert len(children) == 3 and all(alive(pid) for pid in children)
        segments = {p.name for p in SHM_DIR.glob(f"actorq_{process.pid}_*")}
        assert segments, "the weights channel should be in shared memory"
        start = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        elapsed = time.monotonic() - start
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = process.stderr.read().decode(errors="replace")
    assert process.returncode == 0, stderr[-3000:]
    print(f"exited {elapsed:.1f} s after SIGTERM")
    # Bounded by design, not by speed: children get shutdown_timeout_s (5 s) to stop, then
    # SIGTERM and 2 s more, then SIGKILL; the final checkpoint is small. 2.5-5 s measured; 60 s
    # leaves a 10x margin for a slow, loaded machine while still catching a hang.
    assert elapsed < 60.0
    assert not [pid for pid in children if alive(pid)], "child processes outlived the run"
    assert not any((SHM_DIR / name).exists() for name in segments), "segment not unlinked"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert summary["actor_steps"] > 0 and summary["learner_steps"] > 0
    assert read_rows(run / "eval.jsonl") and read_rows(run / "actor_0.jsonl")
    steps = sorted(int(p.name) for p in (run / "checkpoints").iterdir() if p.name.isdigit())
    assert steps and steps[-1] == summary["actor_steps"]

    # --resume continues from that checkpoint (counters, learner state and replay), with the
    # run's own config and a larger budget.
    from actorq.analysis.trained_policy import read_run_config

    config = read_run_config(run)
    config.max_actor_steps = summary["actor_steps"] + 1500
    resumed = run_experiment(config, resume=True)
    assert not resumed["interrupted"]
    assert resumed["actor_steps"] >= summary["actor_steps"] + 1500
    assert resumed["learner_steps"] > summary["learner_steps"]
    evals = read_rows(run / "eval.jsonl")
    assert evals[-1]["actor_steps"] == resumed["actor_steps"]
    assert evals[-1]["learner_steps"] == resumed["learner_steps"]


def test_children_exit_when_the_driver_is_killed(tmp_path):
    """kill -9 on the driver: no cleanup code runs there, yet the actor and evaluator processes
    exit by themselves and the resource tracker unlinks the shared-memory segment."""
    run = tmp_path / "run"
    process = subprocess.Popen(_cli(run, "--config.max_actor_steps=10000000"), cwd=REPO,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: {"actor_0", "actor_1"} <= ready_nodes(run), 150, "both actors to act")
        pids = json.loads((run / "pids.json").read_text())
        children = [pid for node, pid in pids.items() if node != "learner"]
        segments = list(SHM_DIR.glob(f"actorq_{process.pid}_*"))
        assert segments
        process.kill()
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
    wait_for(lambda: not any(alive(pid) for pid in children), 15, "orphaned children to exit")
    wait_for(lambda: not any(s.exists() for s in segments), 15, "the segment to be unlinked")


# ---------------------------------------------------------------------------- Ray launcher


# ray.init forks helper processes after this test process started JAX: harmless here.
@pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")
def test_ray_mixed_precision_fleet(tmp_path, ray_session):
    from launchpad_programs.launch import run_experiment

    run = tmp_path / "run"
    config = dqn_config(run, steps=4000, launcher="ray")
    config.actor_quantizers = "int8,fp32"
    summary = run_experiment(config)
    assert summary["launcher"] == "ray" and summary["actor_steps"] == 4000
    breakdown = json.loads((run / "breakdown.json").read_text())
    assert [breakdown[f"actor_{i}"]["precision"] for i in range(2)] == ["int8", "fp32"]
    assert all(b["bytes_pulled"] > 0 for b in breakdown.values())
    evals = read_rows(run / "eval.jsonl")
    assert evals and "eval_return_fp32" in evals[-1]


@pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")
def test_ray_topology_learns_cartpole_and_survives_a_killed_actor(tmp_path, ray_session):
    from launchpad_programs.launch import run_experiment

    run = tmp_path / "run"
    killed: list[int] = []

    def kill_actor_0() -> None:
        # Ray actors report their pid when they first act (then it is in pids.json).
        wait_for(lambda: "actor_0" in ready_nodes(run), 120, "actor_0 to act")
        pid = json.loads((run / "pids.json").read_text())["actor_0"]
        # Mid-run, by an event: actor_0 has finished an episode (so it has sent experience).
        wait_for(lambda: read_rows(run / "actor_0.jsonl"), 120, "actor_0 to finish an episode")
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    killer = threading.Thread(target=kill_actor_0, daemon=True)
    killer.start()
    summary = run_experiment(dqn_config(run, steps=15000, launcher="ray"))
    killer.join(1)
    print(summary)
    returns = [e["eval_return"] for e in read_rows(run / "eval.jsonl")]
    print("eval returns:", returns)
    assert summary["launcher"] == "ray" and not summary["interrupted"]
    assert summary["actor_steps"] == 15000  # claimed in blocks: the budget holds exactly
    assert summary["num_pulls"] >= 2 and summary["bytes_pulled"] > 0
    assert max(returns) >= 100.0
    assert killed and summary["actor_restarts"] >= 1
    restarts = [e for e in read_rows(run / "events.jsonl") if e.get("event") == "restart"]
    assert restarts and restarts[0]["node"] == "actor_0"
    assert ray_session.is_initialized(), "the launcher must not shut down a Ray it did not start"
    breakdown = json.loads((run / "breakdown.json").read_text())
    assert set(breakdown) == {"actor_0", "actor_1"}
    assert breakdown["actor_0"]["incarnations"] == 2


@pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")
def test_ray_topology_with_3_envs_per_actor_keeps_the_exact_budget(tmp_path, ray_session):
    """Ray actors claim steps in blocks; a batched step takes at most what is left of a claim."""
    from launchpad_programs.launch import run_experiment

    run = tmp_path / "run"
    config = dqn_config(run, steps=3001, launcher="ray")  # not a multiple of 3 x 2 actors
    config.envs_per_actor = 3
    summary = run_experiment(config)
    assert not summary["interrupted"] and summary["actor_steps"] == 3001
    breakdown = json.loads((run / "breakdown.json").read_text())
    assert sum(b["env_steps"] for b in breakdown.values()) == 3001
    assert summary["episodes"] > 0 and summary["num_pulls"] >= 1


def test_missing_ray_gives_install_hint(monkeypatch):
    from launchpad_programs.launchers import ray as ray_launcher

    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(ImportError, match=r"pip install -e \"\.\[ray\]\""):
        ray_launcher.import_ray()


@pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")
def test_ray_learner_resources_missing_on_this_node_fail_before_anything_starts(tmp_path,
                                                                                 ray_session):
    from launchpad_programs.launch import run_experiment

    config = dqn_config(tmp_path / "run", steps=1000, launcher="ray")
    config.ray_learner_resources = "gpu_box=1"
    with pytest.raises(RuntimeError, match=r"needs \{'gpu_box': 1.0\}.*launch the program on a"):
        run_experiment(config)
    assert not (tmp_path / "run" / "events.jsonl").exists()  # no node was started
