"""On-policy (PPO) runs under the launchers' failure modes: unrolls through the queue, killed
actors, SIGTERM and --resume, a queue the learner cannot keep up with, Ray, and environments that
return NaN.

Every run is CartPole PPO with unrolls of T = 16 steps, batches of U = 4 unrolls, 2 environments
per actor and a few thousand env steps; the asserts are on counts and events, never on seconds
(the timeouts only guard against hangs). The learner runs in this process under every launcher,
so the tests watch what reaches it: ``MemoryStream.receive`` (the main node's end of every stream)
is wrapped to keep each experience chunk with the actor that sent it, and
``AdmissionQueue.put`` to see how many items wait for the queue.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest

from actorq.metrics.loggers import read_events, read_jsonl, read_resumes

REPO = Path(__file__).resolve().parents[1]
T = 16  # learner.unroll_length
U = 4  # learner.unrolls_per_batch
ENVS = 2  # envs_per_actor
ACTORS = 2
UNROLL_FIELDS = ("observation", "action", "reward", "discount", "last", "next_observation",
                 "behaviour_logprob", "policy_version")


# ----------------------------------------------------------------------------- helpers


def ppo_config(run_dir: Path, steps: int, launcher: str = "local", num_actors: int = ACTORS):
    """configs/ppo_actorq.py:cartpole, shrunk: 16-step unrolls, batches of 4, a cheap update."""
    from configs import ppo_actorq

    config = ppo_actorq.get_config("cartpole")
    config.launcher = launcher
    config.num_actors = num_actors
    config.envs_per_actor = ENVS
    config.run_dir = str(run_dir)
    config.max_actor_steps = steps
    config.track_energy = False
    config.eval_every_steps = 1_000_000  # the start and final evaluations only
    config.eval_episodes = 1
    config.checkpoint_every_steps = 1000
    config.log_every_seconds = 0.5
    learner = config.learner
    learner.unroll_length = T
    learner.unrolls_per_batch = U
    learner.epochs = 2
    learner.minibatches = 1
    # The preset's own rules for the queue (configs/common.py:on_policy_config) at this size.
    config.pull_period = T
    config.chunk_size = T
    config.replay.max_size = 2 * U
    config.replay.min_size = U
    return config


def _cli(run_dir: Path, *extra: str) -> list[str]:
    """The PPO entry point on the shrunk preset (same settings as ``ppo_config``)."""
    return [sys.executable, "-m", "experiments.ppo_actorq",
            "--config=configs/ppo_actorq.py:cartpole", f"--config.run_dir={run_dir}",
            "--config.track_energy=False", "--config.eval_every_steps=1000000",
            "--config.eval_episodes=1", "--config.checkpoint_every_steps=1000",
            f"--config.envs_per_actor={ENVS}", f"--config.learner.unroll_length={T}",
            f"--config.learner.unrolls_per_batch={U}", "--config.learner.epochs=2",
            "--config.learner.minibatches=1", f"--config.pull_period={T}",
            f"--config.chunk_size={T}", f"--config.replay.max_size={2 * U}",
            f"--config.replay.min_size={U}", *extra]


def read_rows(path: Path) -> list[dict]:
    return read_jsonl(path) if path.exists() else []


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_for(predicate, timeout: float, what: str, poll: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def ready_nodes(run_dir: Path) -> set[str]:
    return {e["node"] for e in read_events(run_dir, "ready")}


class Recorder:
    """What reached the learner (see the module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.chunks: list[tuple[str, dict[str, np.ndarray]]] = []  # (actor, chunk)
        self.max_waiting = 0  # the admission queue's most waiting items, after any put
        self.puts = 0
        self.learner: Any = None  # the LearnerNode
        self.restarts: list[dict[str, Any]] = []  # learner state when a restart arrived
        self.lost: list[tuple[int, int]] = []  # ActorPacing.actor_lost calls

    def items(self, source: str | None = None) -> int:
        with self.lock:
            return sum(len(c["observation"]) for s, c in self.chunks
                       if source is None or s == source)

    def unrolls(self) -> list[tuple[str, dict[str, np.ndarray]]]:
        """Every item received, one unroll each: (actor, {field: [T, ...]})."""
        with self.lock:
            return [(s, {k: v[i] for k, v in c.items()})
                    for s, c in self.chunks for i in range(len(c["observation"]))]


@contextlib.contextmanager
def recording():
    """Wraps the learner's receiving end; yields the Recorder."""
    from actorq.replay.admission import AdmissionQueue
    from launchpad_programs.actorq_program import LearnerNode
    from launchpad_programs.launchers.memory import MemoryStream
    from launchpad_programs.pacing import ActorPacing

    rec = Recorder()
    receive, put = MemoryStream.receive, AdmissionQueue.put
    init, on_event, actor_lost = LearnerNode.__init__, LearnerNode._on_event, \
        ActorPacing.actor_lost

    def recording_receive(self, timeout: float = 0.0):
        messages = receive(self, timeout)
        for source, message in messages:
            if isinstance(message, dict) and set(UNROLL_FIELDS) <= set(message):
                with rec.lock:
                    rec.chunks.append((source, {k: np.array(v) for k, v in message.items()}))
        return messages

    def recording_put(self, chunk):
        inserted = put(self, chunk)
        rec.puts += 1
        rec.max_waiting = max(rec.max_waiting, self.waiting_items)
        return inserted

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        rec.learner = self

    def recording_on_event(self, event):
        node = str(event.get("node"))
        if event.get("event") == "restart" and node in self._actors:
            # A fresh run: each slot is what that actor took in this run.
            rec.restarts.append({"node": node, "slots": self._counter.slots(),
                                 "items": rec.items(node)})
        return on_event(self, event)

    def recording_actor_lost(self, index, steps_without_items):
        rec.lost.append((int(index), int(steps_without_items)))
        return actor_lost(self, index, steps_without_items)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(MemoryStream, "receive", recording_receive)
        mp.setattr(AdmissionQueue, "put", recording_put)
        mp.setattr(LearnerNode, "__init__", recording_init)
        mp.setattr(LearnerNode, "_on_event", recording_on_event)
        mp.setattr(ActorPacing, "actor_lost", recording_actor_lost)
        yield rec


def check_whole_unrolls(rec: Recorder, learner_steps: int) -> None:
    """Every item the learner received is one whole, consistent CartPole unroll of T steps
    (a partial or zero-filled one would show as zero rewards, zero observations, a log-prob of
    0 or a broken observation chain)."""
    unrolls = rec.unrolls()
    assert unrolls
    for source, unroll in unrolls:
        assert source.startswith("actor_"), source
        assert set(unroll) >= set(UNROLL_FIELDS)
        for field in UNROLL_FIELDS:
            assert unroll[field].shape[0] == T, (source, field, unroll[field].shape)
        obs, next_obs = unroll["observation"], unroll["next_observation"]
        assert obs.shape == next_obs.shape == (T, 4)
        assert np.isfinite(obs).all() and np.isfinite(next_obs).all()
        assert (np.abs(obs).sum(axis=-1) > 0).all(), "an all-zero observation row"
        # Within an unroll each step starts where the previous one ended, except after an
        # episode's last step (the next one starts from a reset).
        same = np.all(next_obs[:-1] == obs[1:], axis=-1)
        assert np.all(same | (unroll["last"][:-1] == 1.0)), (source, unroll["last"])
        np.testing.assert_array_equal(unroll["reward"], np.ones(T, np.float32))  # CartPole
        assert set(np.unique(unroll["discount"])) <= {0.0, 1.0}
        assert set(np.unique(unroll["last"])) <= {0.0, 1.0}
        assert np.all((unroll["discount"] == 1.0) | (unroll["last"] == 1.0))
        assert set(np.unique(unroll["action"])) <= {0, 1}
        logprob = unroll["behaviour_logprob"]
        assert np.isfinite(logprob).all() and (logprob <= 0).all() and (logprob < 0).any()
        versions = unroll["policy_version"]
        assert versions.min() >= 0 and versions.max() <= learner_steps
        assert np.all(np.diff(versions) >= 0), versions  # a version is never pulled backwards


def check_queue_counts(run: Path, rec: Recorder, summary: dict) -> dict:
    """The queue's counters against what the actors sent and the learner took; returns the
    learner's last row."""
    last = read_rows(run / "learner.jsonl")[-1]
    received = rec.items()
    assert last["learner_steps"] == summary["learner_steps"] > 0
    # The learner took exactly U unrolls per update, each once.
    assert last["replay_samples"] == summary["learner_steps"] * U
    # Every item received went into the queue or still waits for it (none dropped, none made up).
    assert last["replay_inserts"] + last["admission_waiting"] == received
    assert last["replay_inserts"] - last["replay_samples"] == last["replay_size"]
    assert 0 <= last["replay_size"] <= 2 * U
    # An unroll is T of the counted env steps, and at most T - 1 steps per environment are
    # still in an adder when the run ends.
    assert received * T <= summary["actor_steps"]
    return last


def own_steps(run: Path, actor: str) -> int:
    return int(json.loads((run / "breakdown.json").read_text())[actor]["env_steps"])


# -------------------------------------------------------------------- 1. local, 2 actors


def test_ppo_on_the_local_launcher_takes_every_unroll_once(tmp_path):
    from launchpad_programs.launch import run_experiment

    run, steps = tmp_path / "run", 3000
    with recording() as rec:
        summary = run_experiment(ppo_config(run, steps))
    print(summary)
    assert not summary["interrupted"] and summary["actor_restarts"] == 0
    # The local counter reserves nothing: concurrent actors may pass the budget by what the
    # others took in the same instant (docs/distributed.md), at most (actors - 1) x envs.
    assert steps <= summary["actor_steps"] <= steps + (ACTORS - 1) * ENVS
    assert json.loads((run / "summary.json").read_text())["actor_steps"] == summary["actor_steps"]
    breakdown = json.loads((run / "breakdown.json").read_text())
    assert sum(b["env_steps"] for b in breakdown.values()) == summary["actor_steps"]
    check_queue_counts(run, rec, summary)
    check_whole_unrolls(rec, summary["learner_steps"])
    # Per actor: every env step is in exactly one whole unroll, but for what each of its
    # environments held when it stopped (< T steps each).
    for actor in ("actor_0", "actor_1"):
        held = own_steps(run, actor) - T * rec.items(actor)
        assert 0 <= held <= ENVS * (T - 1), (actor, held)
    assert rec.max_waiting <= ACTORS * ENVS * 2
    evals = read_rows(run / "eval.jsonl")
    assert evals[-1]["actor_steps"] == summary["actor_steps"]
    assert evals[-1]["learner_steps"] == summary["learner_steps"]
    episodes = read_rows(run / "actor_0.jsonl")
    assert episodes and [e["episode"] for e in episodes] == list(range(1, len(episodes) + 1))


def test_single_launcher_learns_every_batch_from_the_version_that_acted(tmp_path):
    """Interleaved with its actor, the learner publishes after the update that consumed a
    batch and before the actor's next action: every unroll of every batch was collected by the
    learner's current version (policy lag 0, as in PPO), not by one or two versions before."""
    from launchpad_programs.launch import run_experiment

    run = tmp_path / "run"
    config = ppo_config(run, 1000, launcher="single", num_actors=1)
    config.log_every_seconds = 1e-6  # a learner row per update
    with recording() as rec:
        summary = run_experiment(config)
    rows = read_rows(run / "learner.jsonl")
    assert summary["learner_steps"] >= 10 and len(rows) >= 10
    assert all(r["sample_policy_lag_max"] == 0.0 for r in rows), [
        (r["learner_steps"], r["sample_policy_lag_max"]) for r in rows]
    # The actor loaded each new version: one per update, not one per two.
    versions = sorted({int(v) for _, u in rec.unrolls() for v in u["policy_version"]})
    assert versions == list(range(len(versions))) and len(versions) >= 10, versions
    # The queue is empty after each update, yet the recipe was calibrated on its unrolls and the
    # drift of each published precision measured (the batch is taken before the update).
    assert config.quantizer == "int8" and summary["calibrated_precisions"] == ["int8"]
    # ... and refitted on fresh unrolls as the inserts doubled (1, 2, 4, ... unrolls).
    assert summary["calibrations"] >= 3, summary["calibrations"]
    assert any(k.startswith("policy_drift_") and k.endswith("/int8") for k in rows[-1]), \
        sorted(rows[-1])


# -------------------------------------------------------------- 2. kill -9 mid-unroll


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory) -> dict[str, Any]:
    """A local run whose actor_0 is killed with SIGKILL while its environments are mid-unroll
    (the learner has its whole unrolls so far; it holds a partial one per environment)."""
    from launchpad_programs.launch import run_experiment

    run, steps = tmp_path_factory.mktemp("killed") / "run", 4000
    killed: list[int] = []
    errors: list[BaseException] = []

    with recording() as rec:
        def kill_actor_0_mid_unroll() -> None:
            try:
                wait_for(lambda: "actor_0" in ready_nodes(run), 180, "actor_0 to act")
                pid = json.loads((run / "pids.json").read_text())["actor_0"]
                wait_for(lambda: rec.items("actor_0") >= 20, 180, "20 unrolls from actor_0")
                counter = rec.learner._counter

                def mid_unroll() -> bool:
                    # Steps actor_0 took that are in no unroll the learner has: its adders'
                    # partial unrolls (ENVS environments stepped together, ENVS * k steps for
                    # k steps into the unroll) plus whole unrolls in flight (multiples of T).
                    # Only `held % T` tells the partial part; keeping it 2 steps per environment
                    # away from a boundary means the kill cannot land on one (a CI run killed at
                    # k = 0, with `held` = one unroll in flight, and lost nothing).
                    held = counter.slots()[0] - T * rec.items("actor_0")
                    return held <= 2 * T and 2 * ENVS <= held % T <= T - 2 * ENVS

                wait_for(mid_unroll, 120, "actor_0 to be mid-unroll", poll=0.001)
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except BaseException as error:  # noqa: BLE001 - reported by the tests
                errors.append(error)

        killer = threading.Thread(target=kill_actor_0_mid_unroll, daemon=True)
        killer.start()
        summary = run_experiment(ppo_config(run, steps))
        killer.join(5)
    print(summary)
    assert not errors, errors
    return {"run": run, "steps": steps, "summary": summary, "rec": rec, "killed": killed}


def test_killed_actor_mid_unroll_sends_nothing_partial(killed_run):
    run, steps, summary, rec = (killed_run[k] for k in ("run", "steps", "summary", "rec"))
    assert killed_run["killed"] and not alive(killed_run["killed"][0])
    assert not summary["interrupted"] and summary["actor_restarts"] >= 1
    assert steps <= summary["actor_steps"] <= steps + (ACTORS - 1) * ENVS
    (restart, *_) = read_events(run, "restart")
    assert restart["node"] == "actor_0" and restart["exitcode"] == -9
    assert json.loads((run / "breakdown.json").read_text())["actor_0"]["incarnations"] == 2
    check_queue_counts(run, rec, summary)
    check_whole_unrolls(rec, summary["learner_steps"])

    # When the restart reached the learner, actor_0 had taken steps that are in no unroll it
    # received: its environments' partial unrolls, which died with it.
    (at_kill,) = rec.restarts
    lost = at_kill["slots"][0] - T * at_kill["items"]
    assert 0 < lost <= ENVS * (T - 1) + ENVS * T, lost  # + ENVS unrolls possibly in flight
    # actor_1 was never killed: all its steps are in whole unrolls but for its last partials.
    own_1 = own_steps(run, "actor_1")
    assert 0 <= own_1 - T * rec.items("actor_1") <= ENVS * (T - 1)
    # actor_0 (two incarnations): its unrolls cover all its steps but what the killed one held
    # and what the new one held at the end.
    own_0 = summary["actor_steps"] - own_1
    assert 0 <= own_0 - T * rec.items("actor_0") <= lost + ENVS * (T - 1)


def test_pacing_is_told_the_steps_a_killed_actor_really_lost(killed_run):
    """ActorPacing.actor_lost gets the steps that never became items: steps taken minus items
    received times the T steps of an item. (Counting received items as steps, as the learner
    node did before launchpad_programs/data_path.py, told it ~(T-1)/T of everything the killed
    actor ever took, letting the actors run that far ahead of the queue.)"""
    rec = killed_run["rec"]
    (at_kill,) = rec.restarts
    taken = at_kill["slots"][0]
    lost = taken - T * at_kill["items"]
    assert taken >= 20 * T  # killed after 20 unrolls: the difference is not a rounding
    assert rec.lost == [(0, lost)]


# ------------------------------------------------------------ 3. SIGTERM and --resume


def test_sigterm_stops_a_ppo_run_cleanly_and_resume_reaches_the_budget(tmp_path):
    """The CLI on the single launcher (the preset's): SIGTERM after the first checkpoint, then
    ``--resume`` with the same command finishes the budget from the interrupted checkpoint."""
    run, steps = tmp_path / "run", 12_000
    command = _cli(run, f"--config.max_actor_steps={steps}")
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: (run / "checkpoints").is_dir() and any(
            p.name.isdigit() for p in (run / "checkpoints").iterdir()), 300,
            "the first checkpoint", poll=0.05)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = process.stderr.read().decode(errors="replace")
    assert process.returncode == 0, stderr[-3000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["interrupted"] is True, summary
    assert 0 < summary["actor_steps"] < steps and summary["learner_steps"] > 0
    checkpoints = sorted(int(p.name) for p in (run / "checkpoints").iterdir()
                         if p.name.isdigit())
    assert checkpoints[-1] == summary["actor_steps"]  # the interrupted run saved where it stopped
    assert (run / "checkpoints" / f"replay_{checkpoints[-1]}").is_dir()
    interrupted_row = read_rows(run / "learner.jsonl")[-1]
    assert interrupted_row["replay_samples"] == summary["learner_steps"] * U

    resumed = subprocess.run(command + ["--resume"], cwd=REPO, capture_output=True, text=True,
                             timeout=600, stdin=subprocess.DEVNULL)
    assert resumed.returncode == 0, (resumed.stdout + resumed.stderr)[-3000:]
    final = json.loads((run / "summary.json").read_text())
    assert not final["interrupted"]
    assert final["actor_steps"] == steps  # the single launcher holds the budget exactly
    assert final["learner_steps"] > summary["learner_steps"]
    (record,) = read_resumes(run)
    assert record["changed"] == {} and record["added"] == []
    assert record["checkpoint_step"] == record["actor_steps"] == summary["actor_steps"]
    assert record["learner_steps"] == summary["learner_steps"]
    assert record["skipped_checkpoints"] == []
    # The queue's counters continued from the checkpoint (its replay went with it).
    last = read_rows(run / "learner.jsonl")[-1]
    assert last["replay_samples"] == final["learner_steps"] * U
    assert last["replay_inserts"] * T <= steps
    evals = read_rows(run / "eval.jsonl")
    assert evals[-1]["actor_steps"] == steps


def test_a_decaying_preset_can_be_resumed_with_a_larger_budget(tmp_path):
    from launchpad_programs.run_directory import RunDirectory

    run = tmp_path / "run"
    RunDirectory(run, ppo_config(run, 3000, launcher="single"), resume=False)
    changes = RunDirectory.check(run, ppo_config(run, 6000, launcher="single"), resume=True)
    decay = changes["changed"].pop("learner.learning_rate_decay_updates")
    assert changes["changed"] == {"max_actor_steps": [3000, 6000]}
    assert decay[1] > decay[0]  # the schedule stretches with the budget (recorded)


def test_learning_rate_decay_spans_the_budget_after_a_batch_override(tmp_path):
    config = ppo_config(tmp_path / "run", 6400, launcher="single")
    assert config.learner.learning_rate_decay_updates == 6400 // (T * U)


# --------------------------------------------------- 4. a full queue blocks the actors


def test_a_full_queue_blocks_actors_and_bounds_what_waits(tmp_path):
    """A queue of one batch and a learner far slower than its actors: actors wait at the step
    limit (their breakdowns count blocked periods) and what waits outside the queue stays within
    the actors' slack."""
    from launchpad_programs.launch import run_experiment

    run, steps = tmp_path / "run", 3000
    config = ppo_config(run, steps)
    config.replay.max_size = U
    config.learner.epochs = 40  # 40 passes per batch: the learner cannot keep up
    config.log_every_seconds = 0.2
    with recording() as rec:
        summary = run_experiment(config)
    print(summary, "max waiting", rec.max_waiting)
    assert not summary["interrupted"]
    assert steps <= summary["actor_steps"] <= steps + (ACTORS - 1) * ENVS
    rows = read_rows(run / "learner.jsonl")
    slack = ACTORS * ENVS * 2  # unrolls: one held and one finishing per environment
    assert rows and max(r["admission_waiting"] for r in rows) <= slack
    assert max(r["replay_size"] for r in rows) <= U
    assert rec.puts > 0 and rec.max_waiting <= slack
    assert rec.max_waiting > 0, "the queue never filled: the learner kept up"
    breakdown = json.loads((run / "breakdown.json").read_text())
    assert sum(b["blocked_calls"] for b in breakdown.values()) > 0
    check_queue_counts(run, rec, summary)
    check_whole_unrolls(rec, summary["learner_steps"])


# ------------------------------------------------------------------------------- 5. Ray


@pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")
def test_ppo_on_ray_takes_every_unroll_once(tmp_path, ray_session):
    from launchpad_programs.launch import run_experiment

    run, steps = tmp_path / "run", 3000
    with recording() as rec:
        summary = run_experiment(ppo_config(run, steps, launcher="ray"))
    print(summary)
    assert summary["launcher"] == "ray" and not summary["interrupted"]
    assert summary["actor_steps"] == steps  # Ray actors claim steps: the budget holds exactly
    assert summary["actor_restarts"] == 0
    breakdown = json.loads((run / "breakdown.json").read_text())
    assert set(breakdown) == {"actor_0", "actor_1"}
    assert sum(b["env_steps"] for b in breakdown.values()) == steps
    check_queue_counts(run, rec, summary)
    check_whole_unrolls(rec, summary["learner_steps"])
    for actor in ("actor_0", "actor_1"):
        held = own_steps(run, actor) - T * rec.items(actor)
        assert 0 <= held <= ENVS * (T - 1), (actor, held)
    assert ray_session.is_initialized()


# ------------------------------------------------------- 6. an environment returns NaN

NAN_AFTER = 150  # steps of one environment instance before its observation turns NaN


def _nan_step(original):
    def step(self, action):
        timestep = original(self, action)
        self._test_steps = getattr(self, "_test_steps", 0) + 1
        if self._test_steps >= NAN_AFTER:
            return timestep._replace(observation=np.full_like(timestep.observation, np.nan))
        return timestep
    return step


# Loaded by the child processes (PYTHONPATH): the same fault, where a monkeypatch cannot reach.
SITECUSTOMIZE = textwrap.dedent(f"""\
    import os
    if os.environ.get("ACTORQ_TEST_NAN_AFTER"):
        import numpy as np
        from actorq.envs import gym_adapter

        _original = gym_adapter.GymAdapter._step

        def _step(self, action):
            timestep = _original(self, action)
            self._test_steps = getattr(self, "_test_steps", 0) + 1
            if self._test_steps >= {NAN_AFTER}:
                return timestep._replace(observation=np.full_like(timestep.observation, np.nan))
            return timestep

        gym_adapter.GymAdapter._step = _step
    """)


def test_nan_observation_stops_a_single_launcher_run_naming_task_and_step(tmp_path,
                                                                           monkeypatch):
    from actorq.envs import NonFiniteError, gym_adapter
    from launchpad_programs.launch import run_experiment

    monkeypatch.setattr(gym_adapter.GymAdapter, "_step", _nan_step(gym_adapter.GymAdapter._step))
    run = tmp_path / "run"
    with recording() as rec, pytest.raises(FloatingPointError) as info:
        run_experiment(ppo_config(run, 100_000, launcher="single"))
    message = str(info.value)
    print(message)
    assert isinstance(info.value, NonFiniteError)
    assert info.value.task == "cartpole" and info.value.field == "observation"
    assert "'cartpole'" in message and f"step {info.value.step}" in message
    assert "non-finite observation" in message
    # The NaN stopped the run at its source: nothing non-finite reached the queue.
    for _, unroll in rec.unrolls():
        assert np.isfinite(unroll["observation"]).all()
        assert np.isfinite(unroll["next_observation"]).all()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["actor_steps"] < 100_000


def test_nan_observation_in_a_local_actor_ends_the_cli_in_one_error_line(tmp_path):
    """The actors are child processes: the fault comes from a sitecustomize on their
    PYTHONPATH. The learner stops the run (the NaN would recur in every restart) and the CLI
    ends with one ``error:`` line naming the actor, the task and the step."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {**os.environ, "ACTORQ_TEST_NAN_AFTER": "1",
           # The repository too: the sitecustomize imports actorq before `-m` puts the working
           # directory on sys.path, and an editable install may point at another checkout.
           "PYTHONPATH": os.pathsep.join(filter(None, [str(site), str(REPO),
                                                        os.environ.get("PYTHONPATH")]))}
    run = tmp_path / "run"
    proc = subprocess.run(
        _cli(run, "--config.launcher=local", f"--config.num_actors={ACTORS}",
             "--config.max_actor_steps=100000"),
        cwd=REPO, capture_output=True, text=True, timeout=300, env=env,
        stdin=subprocess.DEVNULL)
    output = proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2, output[-3000:]
    assert len(errors) == 1, output[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == errors[0]
    error = errors[0]
    assert "'cartpole'" in error and "non-finite observation" in error, error
    assert "at step " in error and ("actor_" in error or "evaluator" in error), error
    assert any(e.get("event") == "error" and "NonFiniteError" in e.get("error", "")
               for e in read_events(run))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["actor_steps"] < 100_000


# ---------------------------------------------- 7. gSDE: the actor samples the learner's density


@pytest.mark.parametrize("gsde", [True, False], ids=["gsde", "gaussian"])
def test_fp32_actors_report_the_learners_log_probabilities(tmp_path, gsde):
    """A2C Pendulum with fp32 actors and normalized observations: the log-probability the actor
    reports for each action is the learner's own (behaviour KL 0 on every update). With gSDE the
    features reach the actor through the package's output layer and its noise is held per
    unroll; the learner normalizes each batch with the statistics the acting package carried
    (updating them first put the KL near 1 in the first updates)."""
    from configs import a2c_actorq
    from launchpad_programs.launch import run_experiment

    config = a2c_actorq.get_config("pendulum")
    config.learner.gsde = gsde
    assert config.learner.normalize_observations
    config.quantizer = "fp32"
    config.track_energy = False
    config.max_actor_steps = 2048
    config.eval_every_steps = 1_000_000
    config.eval_episodes = 1
    config.log_every_seconds = 1e-6  # a learner row per update
    config.run_dir = str(tmp_path / "run")
    summary = run_experiment(config)
    rows = read_rows(tmp_path / "run" / "learner.jsonl")
    assert summary["learner_steps"] >= 30 and len(rows) >= summary["learner_steps"]
    assert all(abs(r["behaviour_kl"]) < 1e-5 for r in rows), [r["behaviour_kl"] for r in rows]
    assert all(r["sample_policy_lag_max"] == 0.0 for r in rows)
    assert all(np.isfinite(r["log_std"]) and np.isfinite(r["entropy"]) for r in rows)
