"""The one pacing rule: the replay table's rate limiter, in the table, the admission queue, the
actors' step limit and every launcher. Assertions are on counts, never on speed."""

from __future__ import annotations

import collections
import math
import types

import ml_collections
import numpy as np
import pytest

from actorq.metrics.loggers import read_jsonl
from actorq.replay import AdmissionQueue, ArraySpec, MinSize, SampleToInsertRatio, Table, Uniform
from configs import dqn_actorq
from launchpad_programs import pacing

SIGNATURE = {"x": ArraySpec((), np.dtype(np.int64))}


def make_table(limiter, max_size: int = 10_000) -> Table:
    return Table("t", max_size, SIGNATURE, sampler=Uniform(), rate_limiter=limiter, seed=0)


def chunk(start: int, n: int) -> dict[str, np.ndarray]:
    return {"x": np.arange(start, start + n, dtype=np.int64)}


def test_admitted_inserts_follows_the_limiter():
    # spi 4, min size 10, error buffer 20: max_diff = 4 * 10 + 20 = 60.
    table = make_table(SampleToInsertRatio(4.0, 10, 20.0))
    assert table.admitted_inserts() == 15  # 15 * 4 <= 60 < 16 * 4
    table.insert_batch(chunk(0, 15))
    assert table.admitted_inserts() == 15 and not table.can_insert(1)
    table.sample(8)
    assert table.admitted_inserts() == 17  # (60 + 8) / 4
    assert make_table(MinSize(10)).admitted_inserts() == math.inf


def test_admission_queue_holds_what_the_limiter_refuses_in_order():
    table = make_table(SampleToInsertRatio(4.0, 10, 20.0))
    queue = AdmissionQueue(table)
    assert queue.put(chunk(0, 20)) == 15 and queue.waiting_items == 5
    assert queue.put(chunk(20, 3)) == 0 and queue.waiting_items == 8  # behind the waiting ones
    table.sample(8)
    assert queue.drain() == 2 and queue.waiting_items == 6
    table.sample(24)
    assert queue.drain() == 6 and queue.waiting_items == 0
    assert table.snapshot()["data"]["x"].tolist() == list(range(23))  # arrival order kept
    with pytest.raises(ValueError):
        queue.put({"x": np.zeros((2, 3), np.int64)})  # wrong shape: refused, nothing kept
    assert queue.waiting_items == 0 and queue.items_received == 23


def _fake_builder(batch_size: int, sgd_steps_per_call: int):
    return types.SimpleNamespace(batch_items=batch_size * sgd_steps_per_call)


def _replay_config(spi: float, min_size: int, **extra) -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict({"launcher": "local", "agent": "dqn", "replay": {
        "rate_limiter": "ratio", "samples_per_insert": spi, "min_size": min_size,
        "samples_per_insert_tolerance": 0.1, "max_times_sampled": 0}})
    config.replay.update(extra)
    return config


@pytest.mark.parametrize("num_actors,n_step,chunk_size,spi,batch", [
    (1, 1, 1, 32.0, 256),
    (4, 5, 64, 32.0, 256),  # the paper's D4PG topology
    (3, 3, 16, 256.0, 512),  # a learner that wants many samples per insert
])
def test_actors_and_learner_never_wait_for_each_other(num_actors, n_step, chunk_size, spi,
                                                      batch):
    """Simulated program: actors whose n-step adders emit items n steps late and who send them in
    chunks (flushed when they must wait), a learner that samples a call's batch whenever the table
    lets it. Whatever the interleaving, one side can always move, and the ratio holds."""
    rng = np.random.default_rng(0)
    min_size = 500
    config = _replay_config(spi, min_size)
    builder = _fake_builder(batch, 1)
    table = make_table(pacing.make_rate_limiter(config, builder))
    admission = AdmissionQueue(table)
    pace = pacing.ActorPacing(table, 0, num_actors, 1, adder_lag=n_step + 1)
    adders = [collections.deque() for _ in range(num_actors)]
    chunks: list[list[int]] = [[] for _ in range(num_actors)]
    steps, item = 0, 0
    limiter = table.rate_limiter
    while steps < 20_000:
        admission.drain()
        if table.can_sample(batch) and rng.random() < 0.5:
            table.sample(batch)
        else:
            movable = [i for i in range(num_actors) if steps < pace.step_limit()]
            if not movable:
                for i in range(num_actors):  # actors at the limit flush, then wait
                    if chunks[i]:
                        admission.put({"x": np.array(chunks[i], np.int64)})
                        chunks[i] = []
                admission.drain()
                assert table.can_sample(batch) or steps < pace.step_limit(), "stalled"
                continue
            i = int(rng.choice(movable))
            steps += 1
            adders[i].append(item)
            item += 1
            if len(adders[i]) >= n_step:  # an item leaves the adder n steps later
                chunks[i].append(adders[i].popleft())
            if len(chunks[i]) >= chunk_size:
                admission.put({"x": np.array(chunks[i], np.int64)})
                chunks[i] = []
        diff = table.num_inserts * spi - table.num_samples
        if table.size >= min_size:
            assert limiter.min_diff - batch <= diff <= limiter.max_diff, diff
    assert table.num_samples / table.num_inserts == pytest.approx(spi, rel=0.1)


def test_error_buffer_is_acme_s_unless_a_call_would_not_fit():
    config = _replay_config(32.0, 1000)
    assert pacing.error_buffer(config, _fake_builder(256, 1)) == 3200.0  # 1000 * 0.1 * 32
    small = _replay_config(32.0, 10)
    assert pacing.error_buffer(small, _fake_builder(256, 4)) == 1024 + 64


@pytest.mark.parametrize("change,message", [
    ({"rate_limiter": "fast"}, "unknown replay.rate_limiter"),
    ({"max_times_sampled": 16}, "max_times_sampled=16"),
    ({"samples_per_insert": 0.0}, "samples_per_insert > 0"),
])
def test_bad_pacing_settings_fail_clearly(change, message):
    config = _replay_config(32.0, 1000, **change)
    with pytest.raises(ValueError, match=message):
        pacing.check_pacing(config)


def test_unpaced_actors_need_a_multi_process_launcher():
    config = _replay_config(32.0, 1000, rate_limiter="none", max_times_sampled=16)
    pacing.check_pacing(config)  # local: the paper's never-blocked actors
    config.launcher = "single"
    with pytest.raises(ValueError, match="nothing to pace against"):
        pacing.check_pacing(config)


def _assert_paced(run_dir, config) -> None:
    """The final learner row: samples per insert within the limiter's bounds."""
    from launchpad_programs.nodes import make_builder_for

    row = read_jsonl(run_dir / "learner.jsonl")[-1]
    limiter = pacing.make_rate_limiter(config, make_builder_for(config))
    inserts, samples = row["replay_inserts"], row["replay_samples"]
    diff = inserts * config.replay.samples_per_insert - samples
    batch = config.learner.batch_size * config.learner.sgd_steps_per_call
    assert limiter.min_diff - batch <= diff <= limiter.max_diff, (inserts, samples)
    assert row["admission_waiting"] >= 0 and samples > 0


@pytest.mark.parametrize("launcher", ["single", "local"])
def test_runs_keep_the_samples_per_insert_ratio(tmp_path, launcher):
    from launchpad_programs.launch import run_experiment

    config = dqn_actorq.get_config("cartpole_small")
    config.launcher = launcher
    config.num_actors = 2 if launcher == "local" else 1
    config.max_actor_steps = 4000
    config.eval_every_steps = 100_000  # only the first and the final evaluation
    config.eval_episodes = 1
    config.track_energy = False
    config.log_every_seconds = 3600.0  # only the final row: it must be written anyway
    config.run_dir = str(tmp_path / launcher)
    summary = run_experiment(config)
    assert summary["actor_steps"] >= 4000
    rows = read_jsonl(tmp_path / launcher / "learner.jsonl")
    assert len(rows) == 1 and rows[0]["actor_steps"] == summary["actor_steps"]
    _assert_paced(tmp_path / launcher, config)
    # Two evaluations per row: the deployed int8 package and the learner's own fp32 policy.
    evals = read_jsonl(tmp_path / launcher / "eval.jsonl")
    assert len(evals) >= 2
    for row in evals:
        assert {"eval_return", "eval_return_fp32", "fp32_policy_version"} <= set(row)
    # The drift of each published precision from the learner's fp32 policy.
    assert {"policy_drift_disagreement/int8", "policy_drift_kl/int8"} <= set(rows[0])
    assert rows[0]["policy_drift_disagreement/fp32"] == 0.0


def test_drift_is_zero_for_fp32_and_positive_for_int2():
    import jax

    import actorq.quantization as q
    from actorq.analysis.drift import PolicyDrift
    from launchpad_programs.nodes import make_builder_for

    config = dqn_actorq.get_config("cartpole_small")
    builder = make_builder_for(config)
    network = builder.policy_network
    params = network.init(jax.random.key(0), np.zeros((1, builder.observation_size), np.float32))
    observations = np.random.default_rng(0).normal(size=(256, builder.observation_size))
    drift = PolicyDrift(network, builder.evaluation_action, observations)
    packages = {spec: q.make_quantizer(spec).quantize(params, network, 1)
                for spec in ("fp32", "int8", "int2")}
    row = drift.measure(params, packages)
    assert row["policy_drift_disagreement/fp32"] == 0.0
    assert row["policy_drift_kl/fp32"] < 1e-9
    assert row["policy_drift_disagreement/int2"] > 0.0 and row["policy_drift_kl/int2"] > 0.0
    assert row["policy_drift_kl/int2"] > row["policy_drift_kl/int8"]


def test_continuous_drift_is_an_action_distance():
    import jax

    import actorq.quantization as q
    from actorq.analysis.drift import PolicyDrift
    from configs import d4pg_actorq
    from launchpad_programs.nodes import make_builder_for

    builder = make_builder_for(d4pg_actorq.get_config("cartpole_balance_small"))
    network = builder.policy_network
    params = network.init(jax.random.key(0), np.zeros((1, builder.observation_size), np.float32))
    observations = np.random.default_rng(0).normal(size=(64, builder.observation_size))
    drift = PolicyDrift(network, builder.evaluation_action, observations)
    row = drift.measure(params, {spec: q.make_quantizer(spec).quantize(params, network, 1)
                                 for spec in ("fp32", "int2")})
    assert row["policy_drift_action_distance/fp32"] < 1e-5
    assert row["policy_drift_action_distance/int2"] > 1e-3


def test_drift_of_a_smoothed_package_compares_against_the_unsmoothed_network():
    """The recipe's package divides each feature by its smoothing factor and folds the factor
    into its first kernel; the float network must read the features unsmoothed. Measured
    against the network on smoothed inputs (the old bug), this package drifted by ~1 on
    features of very different scales; against the right inputs it matches a direct
    comparison and stays small."""
    import jax

    import actorq.quantization as q
    from actorq.analysis.drift import PolicyDrift, package_outputs
    from actorq.analysis.ptq import action_distances
    from configs import d4pg_actorq
    from launchpad_programs.nodes import make_builder_for

    builder = make_builder_for(d4pg_actorq.get_config("cartpole_balance_small"))
    network = builder.policy_network
    params = network.init(jax.random.key(0), np.zeros((1, builder.observation_size), np.float32))
    # Features whose scales differ by 1e4, so the smoothing factors are far from 1.
    scales = np.geomspace(1e-2, 1e2, builder.observation_size).astype(np.float32)
    observations = (np.random.default_rng(0).normal(size=(64, builder.observation_size))
                    .astype(np.float32) * scales)
    package = q.make_quantizer("int8").with_calibration(observations).quantize(params, network, 1)
    assert package.input_smoothing is not None
    assert np.max(np.abs(np.log(package.input_smoothing))) > 1.0
    row = PolicyDrift(network, builder.evaluation_action, observations).measure(
        params, {"int8": package})
    direct = action_distances(
        builder.evaluation_action(np.asarray(network.apply(params, observations))),
        builder.evaluation_action(package_outputs(package, observations)))[0]
    assert row["policy_drift_action_distance/int8"] == pytest.approx(direct, rel=1e-5)
    assert row["policy_drift_action_distance/int8"] < 0.05
    smoothed_inputs = package.prepare(observations)
    wrong = action_distances(
        builder.evaluation_action(np.asarray(network.apply(params, smoothed_inputs))),
        builder.evaluation_action(package_outputs(package, observations)))[0]
    assert wrong > 10 * row["policy_drift_action_distance/int8"]


def test_learner_calibrates_gptq_on_its_fixed_replay_batch():
    """Once replay is warm, the drift batch also calibrates quantizers that take observations:
    the GPTQ and int8-recipe packages of the next version are the ones their quantizers make
    with that batch, and quantizers without calibration are left alone."""
    import jax

    import actorq.quantization as q
    from launchpad_programs.nodes import DriftMonitor, LearnerPackages, make_builder_for

    config = dqn_actorq.get_config("cartpole_small")
    builder = make_builder_for(config)
    network = builder.policy_network
    params = network.init(jax.random.key(0), np.zeros((1, builder.observation_size), np.float32))
    observations = np.random.default_rng(0).normal(
        size=(512, builder.observation_size)).astype(np.float32)

    class Learner:
        steps = 1

        def policy_params(self):
            return params

    class Table:
        size = 0
        num_inserts = 0

        def peek(self, n, seed):
            return {"observation": observations[:n]}

    learner, table = Learner(), Table()
    packages = LearnerPackages(learner, builder, ["gptq_uact_int8", "int8", "rtn_int8", "fp32"])
    monitor = DriftMonitor(builder, table, min_size=100)
    rtn_bytes = packages.sources["gptq_uact_int8"].latest()[1]
    assert monitor.measure(learner, packages) == {}  # replay not warm: nothing happens
    assert not packages.sources["gptq_uact_int8"].calibrated
    table.size = table.num_inserts = 100
    row = monitor.measure(learner, packages)
    assert "policy_drift_disagreement/gptq_uact_int8" in row
    assert packages.sources["gptq_uact_int8"].calibrated
    assert packages.sources["int8"].calibrated
    assert not packages.sources["rtn_int8"].calibrated and not packages.sources["fp32"].calibrated
    version, gptq_bytes = packages.sources["gptq_uact_int8"].latest()
    assert version == 1 and gptq_bytes != rtn_bytes  # requantized at the same version
    expected = q.make_quantizer("gptq_uact_int8").with_calibration(
        observations[:DriftMonitor.BATCH]).quantize(params, network, 1)
    assert gptq_bytes == expected.to_bytes()
    recipe = q.PolicyPackage.from_bytes(packages.sources["int8"].latest()[1])
    expected = q.make_quantizer("int8").with_calibration(
        observations[:DriftMonitor.BATCH]).quantize(params, network, 1)
    assert recipe.input_smoothing is not None
    np.testing.assert_array_equal(recipe.input_smoothing, expected.input_smoothing)


def test_learner_recalibrates_when_the_inserts_double():
    """The first calibration batch holds the untrained policy's states, so the recipe is
    refitted on a fresh batch each time the table's inserts double: the package of the next
    version is the one the quantizer makes with the new batch, and the fixed drift batch stays."""
    import jax

    import actorq.quantization as q
    from launchpad_programs.nodes import DriftMonitor, LearnerPackages, make_builder_for

    config = dqn_actorq.get_config("cartpole_small")
    builder = make_builder_for(config)
    network = builder.policy_network
    params = network.init(jax.random.key(0), np.zeros((1, builder.observation_size), np.float32))
    rng = np.random.default_rng(0)
    early = rng.normal(size=(256, builder.observation_size)).astype(np.float32)
    late = 5.0 * rng.normal(size=(256, builder.observation_size)).astype(np.float32)

    class Learner:
        steps = 1

        def policy_params(self):
            return params

    class Table:
        size = num_inserts = 100
        observations = early
        seeds: list[int] = []

        def peek(self, n, seed):
            self.seeds.append(seed)
            return {"observation": self.observations[:n]}

    learner, table = Learner(), Table()
    packages = LearnerPackages(learner, builder, ["int8"])
    monitor = DriftMonitor(builder, table, min_size=100)

    def smoothing():
        return q.PolicyPackage.from_bytes(packages.sources["int8"].latest()[1]).input_smoothing

    def expected(observations):
        return q.make_quantizer("int8").with_calibration(observations).quantize(
            params, network, 1).input_smoothing

    monitor.capture(packages)
    assert monitor.calibrations == 1
    np.testing.assert_array_equal(smoothing(), expected(early))
    drift = monitor._drift
    table.observations = late
    table.size = table.num_inserts = 199  # not yet doubled
    monitor.capture(packages)
    assert monitor.calibrations == 1
    np.testing.assert_array_equal(smoothing(), expected(early))
    table.num_inserts = 200
    monitor.capture(packages)
    assert monitor.calibrations == 2 and monitor._drift is drift
    np.testing.assert_array_equal(smoothing(), expected(late))
    assert not np.array_equal(expected(late), expected(early))
    table.num_inserts = 399
    monitor.capture(packages)
    assert monitor.calibrations == 2
    table.num_inserts = 400
    monitor.capture(packages)
    assert monitor.calibrations == 3
    assert table.seeds == [0, 1, 2]  # a fresh draw each time
