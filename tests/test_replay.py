"""Tests for actorq.replay: tables, samplers, rate limiters, adders, checkpoints, prefetching."""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Callable
from typing import Any

import dm_env
import numpy as np
import pytest

from actorq.replay import (
    ArraySpec,
    Fifo,
    MinSize,
    NStepTransitionAdder,
    PrefetchingIterator,
    Prioritized,
    RateLimiterTimeout,
    SampleToInsertRatio,
    SumTree,
    Table,
    TableClosedError,
    Uniform,
    importance_weights,
    rate_limiter_from_config,
    sampler_from_config,
    signature_from_example,
)

pytestmark = pytest.mark.timeout(60)

SIG = {
    "observation": ArraySpec((3,), np.float32),
    "action": ArraySpec((), np.int64),
    "reward": ArraySpec((), np.float32),
}


def item(i: int) -> dict[str, np.ndarray]:
    return {
        "observation": np.full(3, i, dtype=np.float32),
        "action": np.asarray(i, dtype=np.int64),
        "reward": np.asarray(i, dtype=np.float32),
    }


def batch_of(ids: list[int]) -> dict[str, np.ndarray]:
    items = [item(i) for i in ids]
    return {k: np.stack([it[k] for it in items]) for k in SIG}


def make_table(
    sampler: Any = None,
    limiter: Any = None,
    max_size: int = 100,
    max_times_sampled: int = 0,
    **kwargs: Any,
) -> Table:
    return Table(
        name="test",
        max_size=max_size,
        signature=SIG,
        sampler=Uniform() if sampler is None else sampler,
        rate_limiter=MinSize(1) if limiter is None else limiter,
        max_times_sampled=max_times_sampled,
        seed=0,
        **kwargs,
    )


def run_in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Runs fn in a daemon thread; the result or exception lands in the returned dict."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["result"] = fn()
        except BaseException as e:  # noqa: BLE001
            out["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, out


def assert_blocked(t: threading.Thread, seconds: float = 0.15) -> None:
    t.join(seconds)
    assert t.is_alive(), "expected the call to block"


def assert_released(t: threading.Thread, out: dict[str, Any]) -> Any:
    t.join(5.0)
    assert not t.is_alive(), "expected the call to be released"
    if "error" in out:
        raise out["error"]
    return out.get("result")


# ---------------------------------------------------------------------------------- n-step adder


def ts(step_type: dm_env.StepType, obs: float, reward: float | None = None,
       discount: float | None = None) -> dm_env.TimeStep:
    return dm_env.TimeStep(step_type, reward, discount, np.full(2, obs, dtype=np.float64))


def run_episode(rewards: list[float], discounts: list[float], n: int = 3,
                gamma: float = 0.9, extras: bool = False) -> list[dict[str, np.ndarray]]:
    out: list[dict[str, np.ndarray]] = []
    adder = NStepTransitionAdder(out.append, n_step=n, discount=gamma)
    adder.add_first(ts(dm_env.StepType.FIRST, 0))
    for i, (r, d) in enumerate(zip(rewards, discounts)):
        last = i == len(rewards) - 1
        step_type = dm_env.StepType.LAST if last else dm_env.StepType.MID
        ex = {"policy_version": np.asarray(i, dtype=np.int32)} if extras else None
        adder.add(np.asarray(10 + i, dtype=np.int64), ts(step_type, i + 1, r, d), extras=ex)
    return out


def check_transitions(out: list[dict[str, np.ndarray]], expected: list[tuple]) -> None:
    assert len(out) == len(expected)
    for t, (start, reward, discount, next_obs) in zip(out, expected):
        assert set(t) >= {"observation", "action", "reward", "discount", "next_observation"}
        np.testing.assert_array_equal(t["observation"], np.full(2, start, np.float32))
        assert t["observation"].dtype == np.float32
        assert t["action"] == 10 + start and t["action"].dtype == np.int64
        assert t["reward"].shape == () and t["reward"].dtype == np.float32
        assert t["discount"].shape == () and t["discount"].dtype == np.float32
        np.testing.assert_allclose(t["reward"], reward, rtol=1e-6)
        np.testing.assert_allclose(t["discount"], discount, rtol=1e-6)
        np.testing.assert_array_equal(t["next_observation"], np.full(2, next_obs, np.float32))


def test_nstep_termination_hand_computed() -> None:
    # n=3, gamma=0.9, rewards 1..5, the 5th step terminates (d=0).
    out = run_episode([1, 2, 3, 4, 5], [1, 1, 1, 1, 0])
    check_transitions(out, [
        (0, 1 + 0.9 * 2 + 0.81 * 3, 0.729, 3),   # 5.23
        (1, 2 + 0.9 * 3 + 0.81 * 4, 0.729, 4),   # 7.94
        (2, 3 + 0.9 * 4 + 0.81 * 5, 0.0, 5),     # 10.65, window hits the terminal step
        (3, 4 + 0.9 * 5, 0.0, 5),                # 8.5
        (4, 5.0, 0.0, 5),
    ])


def test_nstep_truncation_keeps_bootstrapping() -> None:
    out = run_episode([1, 2, 3, 4, 5], [1, 1, 1, 1, 1])
    check_transitions(out, [
        (0, 5.23, 0.729, 3),
        (1, 7.94, 0.729, 4),
        (2, 10.65, 0.729, 5),
        (3, 8.5, 0.81, 5),
        (4, 5.0, 0.9, 5),
    ])


def test_nstep_env_discounts_enter_reward_and_discount() -> None:
    # d_1 = 0.5: R = r1 + g d1 r2 + g^2 d1 d2 r3, discount = prod(g d_k).
    out = run_episode([1, 2, 3], [0.5, 1, 1], n=3, extras=True)
    check_transitions(out, [
        (0, 1 + 0.9 * 0.5 * 2 + 0.81 * 0.5 * 3, 0.729 * 0.5, 3),
        (1, 2 + 0.9 * 3, 0.81, 3),
        (2, 3.0, 0.9, 3),
    ])
    assert [int(t["policy_version"]) for t in out] == [0, 1, 2]


def test_nstep_emission_timing_and_episode_restart() -> None:
    out: list[dict[str, np.ndarray]] = []
    adder = NStepTransitionAdder(out.append, n_step=2, discount=1.0)
    with pytest.raises(ValueError, match="add_first"):
        adder.add(0, ts(dm_env.StepType.MID, 1, 0.0, 1.0))
    adder.add_first(ts(dm_env.StepType.FIRST, 0))
    adder.add(0, ts(dm_env.StepType.MID, 1, 1.0, 1.0))
    assert out == []
    adder.add(0, ts(dm_env.StepType.MID, 2, 1.0, 1.0))
    assert len(out) == 1
    adder.add(0, ts(dm_env.StepType.LAST, 3, 1.0, 1.0))
    assert len(out) == 3  # one full window + the flushed 1-step window
    with pytest.raises(ValueError, match="add_first"):  # a new episode must start first
        adder.add(0, ts(dm_env.StepType.MID, 4, 1.0, 1.0))
    adder.add_first(ts(dm_env.StepType.FIRST, 10))
    adder.reset()  # drops the partial episode
    adder.add_first(ts(dm_env.StepType.FIRST, 20))
    adder.add(0, ts(dm_env.StepType.LAST, 21, 2.0, 0.0))
    assert len(out) == 4 and float(out[-1]["reward"]) == 2.0
    assert float(out[-1]["discount"]) == 0.0


@pytest.mark.parametrize("kwargs", [{"n_step": 0, "discount": 0.9},
                                    {"n_step": 3, "discount": 1.5},
                                    {"n_step": 3, "discount": -0.1}])
def test_nstep_validates_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        NStepTransitionAdder(lambda t: None, **kwargs)


def test_nstep_n1_one_step_transitions_feed_a_table() -> None:
    example = run_episode([1.0], [0.0], n=1)[0]
    table = Table("t", 10, signature_from_example(example), Uniform(), MinSize(1))
    adder = NStepTransitionAdder(table.insert, n_step=1, discount=0.99)
    adder.add_first(ts(dm_env.StepType.FIRST, 0))
    for i in range(3):
        adder.add(np.asarray(10 + i, dtype=np.int64),
                  ts(dm_env.StepType.LAST if i == 2 else dm_env.StepType.MID, i + 1, 1.0, 1.0))
    assert table.size == 3
    np.testing.assert_allclose(table.snapshot()["data"]["discount"], [0.99] * 3, rtol=1e-6)


# ---------------------------------------------------------------------------------- rate limiters


def test_min_size_blocks_samples_until_enough_items() -> None:
    table = make_table(limiter=MinSize(3))
    for i in range(2):
        table.insert(item(i), timeout=0)
    assert not table.can_sample(1)
    with pytest.raises(RateLimiterTimeout):
        table.sample(1, timeout=0.05)
    t, out = run_in_thread(lambda: table.sample(2))
    assert_blocked(t)
    table.insert(item(2), timeout=0)  # inserts never block under MinSize
    batch = assert_released(t, out)
    assert batch.keys.shape == (2,)
    for i in range(3, 50):  # ...not even far ahead of sampling
        assert table.can_insert()
        table.insert(item(i), timeout=0)


def test_sample_to_insert_ratio_blocks_the_sampler_until_inserts_catch_up() -> None:
    # spi=2, min_size=2, error_buffer=4: offset 4, min_diff 0, max_diff 8.
    limiter = SampleToInsertRatio(samples_per_insert=2.0, min_size_to_sample=2, error_buffer=4)
    assert (limiter.min_diff, limiter.max_diff) == (0.0, 8.0)
    table = make_table(limiter=limiter)
    table.insert(item(0))
    assert not table.can_sample(1)  # below min size
    table.insert(item(1))  # diff = 2 * 2 - 0 = 4
    assert table.can_sample(4) and not table.can_sample(5)
    table.sample(4)  # diff = 0
    assert not table.can_sample(1)
    with pytest.raises(RateLimiterTimeout):
        table.sample(1, timeout=0.05)
    t, out = run_in_thread(lambda: table.sample(2))
    assert_blocked(t)
    table.insert(item(2))  # diff = 2: enough for the blocked batch of 2
    assert_released(t, out)
    assert table.num_samples == 6 and table.num_inserts == 3


def test_sample_to_insert_ratio_blocks_the_inserter_when_too_far_ahead() -> None:
    limiter = SampleToInsertRatio(samples_per_insert=2.0, min_size_to_sample=2, error_buffer=4)
    table = make_table(limiter=limiter)
    for i in range(4):  # two free inserts below min size, then diff = 6, 8 <= max_diff
        table.insert(item(i), timeout=0)
    assert not table.can_insert()  # (4 + 1) * 2 - 0 = 10 > 8
    with pytest.raises(RateLimiterTimeout):
        table.insert(item(4), timeout=0.05)
    assert table.size == 4 and table.num_inserts == 4
    t, out = run_in_thread(lambda: table.insert(item(4)))
    assert_blocked(t)
    table.sample(1)  # 10 - 1 = 9 > 8: still blocked
    assert_blocked(t, 0.1)
    table.sample(1)  # 10 - 2 = 8: released
    assert assert_released(t, out) == 4
    assert table.size == 5


def test_sample_to_insert_ratio_validation_and_deadlock_guard() -> None:
    with pytest.raises(ValueError, match="error_buffer"):
        SampleToInsertRatio(samples_per_insert=4.0, min_size_to_sample=1, error_buffer=3)
    with pytest.raises(ValueError):
        SampleToInsertRatio(samples_per_insert=0.0, min_size_to_sample=1, error_buffer=3)
    with pytest.raises(ValueError):
        MinSize(0)
    limiter = SampleToInsertRatio(samples_per_insert=2.0, min_size_to_sample=2, error_buffer=4)
    assert limiter.max_sample_batch() == 7
    table = make_table(limiter=limiter)
    with pytest.raises(ValueError, match="deadlock"):
        table.sample(8, timeout=0)
    with pytest.raises(ValueError, match="min_size_to_sample"):
        make_table(limiter=MinSize(11), max_size=10)


def test_rate_limiter_configs_round_trip() -> None:
    for limiter in [MinSize(5), SampleToInsertRatio(1.5, 10, 3.0),
                    SampleToInsertRatio(1.0, 10, (-2.0, 7.0))]:
        assert rate_limiter_from_config(json.loads(json.dumps(limiter.config()))) == limiter
    for sampler in [Uniform(), Fifo(), Prioritized(0.6)]:
        assert sampler_from_config(json.loads(json.dumps(sampler.config()))) == sampler


def test_close_unblocks_waiters_with_a_clear_error() -> None:
    limiter = SampleToInsertRatio(samples_per_insert=1.0, min_size_to_sample=1, error_buffer=1)
    sampling_table = make_table(limiter=MinSize(1))
    inserting_table = make_table(limiter=limiter)
    inserting_table.insert(item(0))
    inserting_table.insert(item(1))  # (2+1)*1 - 0 = 3 > max_diff 2: next insert blocks
    ts_, out_s = run_in_thread(lambda: sampling_table.sample(1))
    ti, out_i = run_in_thread(lambda: inserting_table.insert(item(2)))
    assert_blocked(ts_)
    assert_blocked(ti, 0.01)
    sampling_table.close()
    inserting_table.close()
    for t, out in [(ts_, out_s), (ti, out_i)]:
        t.join(5.0)
        assert not t.is_alive()
        assert isinstance(out["error"], TableClosedError)
        assert "closed" in str(out["error"])
    with pytest.raises(TableClosedError):
        sampling_table.insert(item(0))
    assert not sampling_table.can_insert() and sampling_table.info()["closed"]


def test_insert_batch_is_rate_limited_per_item() -> None:
    limiter = SampleToInsertRatio(samples_per_insert=1.0, min_size_to_sample=1, error_buffer=2)
    table = make_table(limiter=limiter)  # min_diff -1, max_diff 3
    with pytest.raises(RateLimiterTimeout) as info:
        table.insert_batch(batch_of(list(range(6))), timeout=0.05)
    assert info.value.inserted_keys == [0, 1, 2]
    assert table.size == 3
    table.sample(3)
    assert table.insert_batch(batch_of([3, 4, 5]), timeout=0) == [3, 4, 5]


# ------------------------------------------------------------------------------------- samplers


def draw_counts(table: Table, n_batches: int = 20, batch_size: int = 1000) -> np.ndarray:
    counts = np.zeros(table.num_inserts, dtype=np.int64)
    for _ in range(n_batches):
        np.add.at(counts, table.sample(batch_size).keys, 1)
    return counts


def chi_square(counts: np.ndarray, probs: np.ndarray) -> float:
    expected = counts.sum() * probs
    return float(((counts - expected) ** 2 / expected).sum())


def test_prioritized_frequencies_match_priorities_and_follow_updates() -> None:
    table = make_table(sampler=Prioritized(priority_exponent=1.0))
    priorities = np.array([1.0, 2.0, 3.0, 4.0])
    for i, p in enumerate(priorities):
        table.insert(item(i), priority=p)
    batch = table.sample(8)
    np.testing.assert_allclose(batch.probabilities, priorities[batch.keys] / 10.0)
    np.testing.assert_allclose(batch.priorities, priorities[batch.keys])
    counts = draw_counts(table)
    # 3 degrees of freedom: chi2 > 16.3 has p < 0.001.
    assert chi_square(counts, priorities / 10) < 16.3, counts
    table.update_priorities([0, 3, 99], [4.0, 1.0, 5.0])  # key 99 does not exist: ignored
    new = np.array([4.0, 2.0, 3.0, 1.0])
    counts = draw_counts(table)
    assert counts[0] > counts[3] * 3
    assert chi_square(counts, new / 10) < 16.3, counts


def test_prioritized_exponent_and_zero_priorities() -> None:
    table = make_table(sampler=Prioritized(priority_exponent=0.5))
    for i, p in enumerate([1.0, 4.0, 0.0]):
        table.insert(item(i), priority=p)
    counts = draw_counts(table, n_batches=10)
    assert counts[2] == 0  # priority 0 is never sampled while others are positive
    assert chi_square(counts[:2], np.array([1.0, 2.0]) / 3) < 10.8, counts
    table.update_priorities([0, 1], [0.0, 0.0])  # all zero: uniform fallback
    keys = table.sample(3000).keys
    assert set(np.unique(keys).tolist()) == {0, 1, 2}


def test_uniform_frequencies_and_probabilities() -> None:
    table = make_table(sampler=Uniform())
    for i in range(5):
        table.insert(item(i))
    batch = table.sample(10)
    np.testing.assert_allclose(batch.probabilities, 0.2)
    assert batch.table_size == 5
    assert chi_square(draw_counts(table, 10), np.full(5, 0.2)) < 18.5


def test_importance_weights() -> None:
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    w = importance_weights(probs, table_size=4, beta=0.5)
    expected = (4 * probs) ** -0.5
    np.testing.assert_allclose(w, expected / expected.max())
    assert w.max() == pytest.approx(1.0) and w.argmax() == 0
    np.testing.assert_allclose(importance_weights(probs, 4, 0.0), 1.0)
    with pytest.raises(ValueError):
        importance_weights(np.array([0.0, 1.0]), 2, 0.5)


def test_fifo_sampler_order() -> None:
    table = make_table(sampler=Fifo(), max_times_sampled=1)
    table.insert_batch(batch_of(list(range(6))))
    assert table.sample(1).keys.tolist() == [0]
    assert table.sample(3).keys.tolist() == [1, 2, 3]
    np.testing.assert_array_equal(table.sample(1).data["observation"], [[4, 4, 4]])
    table.insert(item(6))
    assert table.sample(2).keys.tolist() == [5, 6]
    assert table.size == 0
    # Without max_times_sampled it keeps returning the oldest item.
    table = make_table(sampler=Fifo())
    table.insert_batch(batch_of([0, 1]))
    assert table.sample(3).keys.tolist() == [0, 0, 0]


def test_max_times_sampled_removes_after_n_samples() -> None:
    table = make_table(sampler=Uniform(), max_times_sampled=3)
    table.insert_batch(batch_of([0, 1, 2, 3]))
    seen = np.zeros(4, dtype=np.int64)
    while table.can_sample(1):
        np.add.at(seen, table.sample(1 + table.num_samples % 3).keys, 1)
        snap = table.snapshot()
        assert (snap["times_sampled"] < 3).all()
    assert seen.tolist() == [3, 3, 3, 3]
    assert table.size == 0 and table.num_deletes == 4 and table.num_samples == 12
    # Within one batch an item is never drawn more often than its remaining allowance.
    table = make_table(sampler=Fifo(), max_times_sampled=2)
    table.insert_batch(batch_of([0, 1, 2]))
    assert not table.can_sample(7)
    assert table.sample(5).keys.tolist() == [0, 0, 1, 1, 2]
    assert table.snapshot()["keys"].tolist() == [2]
    # Freed slots are reused without disturbing the survivors.
    table.insert_batch(batch_of([10, 11]))
    snap = table.snapshot()
    assert snap["keys"].tolist() == [2, 3, 4]
    np.testing.assert_array_equal(snap["data"]["action"], [2, 10, 11])
    assert snap["times_sampled"].tolist() == [1, 0, 0]


def test_max_times_sampled_prioritized_batch_statistics() -> None:
    table = make_table(sampler=Prioritized(1.0), max_times_sampled=2, max_size=1000)
    table.insert_batch(batch_of(list(range(500))), priorities=np.arange(1, 501))
    total = 0
    while table.can_sample(64):
        keys = table.sample(64).keys
        total += 64
        assert np.bincount(keys).max() <= 2
    assert table.num_samples == total
    snap = table.snapshot()
    assert (snap["times_sampled"] < 2).all()
    assert table.size == 500 - table.num_deletes


def test_max_times_sampled_within_batch_follows_item_by_item_law() -> None:
    # mts=1: a batch of 2 from priorities 1:2:3 must be drawn without replacement, i.e.
    # P(i then j) = p_i * p_j / (1 - p_i), as Reverb's item-by-item sampling gives.
    p = np.array([1.0, 2.0, 3.0]) / 6
    table = make_table(sampler=Prioritized(1.0), max_times_sampled=1)
    counts = np.zeros((3, 3))
    for _ in range(2000):
        base = table.num_inserts
        table.insert_batch(batch_of([0, 1, 2]), priorities=[1.0, 2.0, 3.0])
        i, j = table.sample(2).keys - base
        counts[i, j] += 1
        table.sample(1)
    assert np.trace(counts) == 0
    expected = np.array([[p[i] * p[j] / (1 - p[i]) if i != j else 0 for j in range(3)]
                         for i in range(3)])
    off = ~np.eye(3, dtype=bool)
    # 5 degrees of freedom: chi2 > 20.5 has p < 0.001.
    assert chi_square(counts[off], expected[off]) < 20.5, counts


def test_fifo_eviction_at_max_size() -> None:
    table = make_table(sampler=Fifo(), max_size=3)
    keys = [table.insert(item(i)) for i in range(5)]
    assert keys == [0, 1, 2, 3, 4]
    assert table.size == 3 and table.num_inserts == 5 and table.num_deletes == 2
    assert table.snapshot()["keys"].tolist() == [2, 3, 4]
    assert table.sample(1).keys.tolist() == [2]
    # A batch larger than the table keeps only its newest rows.
    table.insert_batch(batch_of(list(range(10, 15))))
    snap = table.snapshot()
    np.testing.assert_array_equal(snap["data"]["action"], [12, 13, 14])


# ----------------------------------------------------------------------------------- validation


def good_item() -> dict[str, np.ndarray]:
    return item(7)


BAD_ITEMS: list[tuple[str, Callable[[dict[str, np.ndarray]], None], str]] = [
    ("wrong shape", lambda it: it.__setitem__("observation", np.zeros(4, np.float32)),
     "observation"),
    ("wrong dtype", lambda it: it.__setitem__("observation", np.zeros(3, np.float64)),
     "observation"),
    ("missing key", lambda it: it.pop("action"), "missing"),
    ("extra key", lambda it: it.__setitem__("bonus", np.zeros(())), "unexpected"),
    ("nan reward", lambda it: it.__setitem__("reward", np.asarray(np.nan, np.float32)),
     "reward"),
    ("inf obs", lambda it: it.__setitem__("observation", np.array([0, np.inf, 0], np.float32)),
     "observation"),
]


def state_of(table: Table) -> tuple:
    snap = table.snapshot()
    return (table.size, table.num_inserts, table.num_samples, table.num_deletes,
            snap["keys"].tolist(), snap["priorities"].tolist(),
            {k: v.tolist() for k, v in snap["data"].items()})


@pytest.mark.parametrize("name,corrupt,match", BAD_ITEMS, ids=[b[0] for b in BAD_ITEMS])
def test_bad_inserts_are_rejected_and_leave_the_table_unchanged(
    name: str, corrupt: Callable[[dict[str, np.ndarray]], None], match: str
) -> None:
    table = make_table(sampler=Prioritized(1.0), max_size=4)
    table.insert_batch(batch_of([0, 1, 2, 3]))  # full: a successful insert would evict
    table.sample(2)
    before = state_of(table)
    bad = good_item()
    corrupt(bad)
    with pytest.raises(ValueError, match=match):
        table.insert(bad)
    assert state_of(table) == before
    # The same corruption in one element of a batch rejects the whole batch.
    rows = [good_item(), good_item(), bad]
    with pytest.raises(ValueError):
        table.insert_batch({k: np.stack([r[k] for r in rows if k in r]) for k in bad})
    assert state_of(table) == before


def test_bad_priorities_and_batch_elements_are_rejected() -> None:
    table = make_table(sampler=Prioritized(1.0))
    table.insert(item(0))
    before = state_of(table)
    for p in [-1.0, np.nan, np.inf]:
        with pytest.raises(ValueError, match="priority"):
            table.insert(item(1), priority=p)
    with pytest.raises(ValueError, match="element 1"):
        table.insert_batch(batch_of([1, 2, 3]), priorities=[1.0, -2.0, 1.0])
    batch = batch_of([1, 2, 3])
    batch["reward"][2] = np.nan
    with pytest.raises(ValueError, match="reward.*element 2"):
        table.insert_batch(batch)
    batch = batch_of([1, 2, 3])
    batch["action"] = batch["action"][:2]  # inconsistent batch sizes
    with pytest.raises(ValueError, match="action"):
        table.insert_batch(batch)
    with pytest.raises(ValueError):
        table.update_priorities([0], [np.nan])
    with pytest.raises(ValueError, match="overflow"):
        make_table(sampler=Prioritized(400.0)).insert(item(0), priority=1e10)
    assert state_of(table) == before
    with pytest.raises(ValueError, match="expected shape \\(3,\\) dtype float32, got shape"):
        table.insert({**item(0), "observation": np.zeros((3, 1), np.float32)})


# ------------------------------------------------------------------------------- save / restore


def saved_meta(directory: Any) -> dict[str, Any]:
    meta = json.loads((directory / "meta.json").read_text())
    meta.pop("checkpoint_id")
    return meta


def test_save_restore_round_trips_exactly(tmp_path: Any) -> None:
    limiter = SampleToInsertRatio(samples_per_insert=2.0, min_size_to_sample=2, error_buffer=50)
    table = make_table(sampler=Prioritized(0.7), limiter=limiter, max_size=6,
                       max_times_sampled=3)
    table.insert_batch(batch_of(list(range(8))), priorities=np.linspace(0.5, 4.0, 8))
    table.sample(5)
    table.update_priorities([3, 4], [0.125, 9.5])
    table.save(tmp_path / "ckpt")
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["items.npz", "meta.json"]

    restored = Table.restore(tmp_path / "ckpt")
    assert restored.info() == table.info()
    assert restored.sampler == table.sampler and restored.rate_limiter == table.rate_limiter
    a, b = table.snapshot(), restored.snapshot()
    for k in ["keys", "priorities", "times_sampled"]:
        np.testing.assert_array_equal(a[k], b[k])
    for k, spec in SIG.items():
        np.testing.assert_array_equal(a["data"][k], b["data"][k])
        assert b["data"][k].dtype == spec.dtype
    restored.save(tmp_path / "again")
    assert saved_meta(tmp_path / "again") == saved_meta(tmp_path / "ckpt")
    # Rate-limiter decisions and counters continue from the checkpoint.
    for n in range(1, 40):
        assert restored.can_sample(n) == table.can_sample(n)
        assert restored.can_insert(n) == table.can_insert(n)
    assert restored.insert(item(8)) == table.insert(item(8)) == 8

    # Load into an existing table with the same signature.
    other = make_table(sampler=Prioritized(0.7), limiter=limiter, max_size=6,
                       max_times_sampled=3)
    other.insert(item(99))
    assert other.restore(tmp_path / "ckpt") is other
    assert other.info() == Table.restore(tmp_path / "ckpt").info()
    other.sample(4)  # sampling after restore keeps times_sampled consistent
    assert (other.snapshot()["times_sampled"] < 3).all()


def test_restore_rejects_a_signature_mismatch(tmp_path: Any) -> None:
    table = make_table()
    table.insert(item(0))
    table.save(tmp_path)
    sig = dict(SIG, reward=ArraySpec((), np.float64))
    other = Table("other", 10, sig, Uniform(), MinSize(1))
    other.insert({**item(5), "reward": np.asarray(5.0)})
    with pytest.raises(ValueError, match="signature"):
        other.restore(tmp_path)
    assert other.size == 1 and other.snapshot()["keys"].tolist() == [0]
    missing = Table("other", 10, {"observation": SIG["observation"]}, Uniform(), MinSize(1))
    with pytest.raises(ValueError, match="signature"):
        missing.restore(tmp_path)


def test_save_is_atomic_per_file_and_detects_mixed_checkpoints(tmp_path: Any) -> None:
    table = make_table()
    table.insert(item(0))
    table.save(tmp_path / "a")
    table.insert(item(1))
    table.save(tmp_path / "a")  # overwrite in place
    assert Table.restore(tmp_path / "a").size == 2
    assert not [p for p in (tmp_path / "a").iterdir() if ".tmp-" in p.name]
    table.save(tmp_path / "b")
    (tmp_path / "a" / "items.npz").write_bytes((tmp_path / "b" / "items.npz").read_bytes())
    with pytest.raises(ValueError, match="different"):
        Table.restore(tmp_path / "a")


# --------------------------------------------------------------------------------------- threads


def test_thread_safety_smoke() -> None:
    table = make_table(sampler=Prioritized(0.6), limiter=MinSize(10), max_size=64,
                       max_times_sampled=4)
    stop = threading.Event()
    sampled = []
    errors: list[BaseException] = []

    def inserter(offset: int) -> None:
        for i in range(200):
            if i % 10 == 0:
                table.insert_batch(batch_of([offset + i] * 3), priorities=[1.0, 2.0, 3.0])
            else:
                table.insert(item(offset + i), priority=1.0 + i % 5)

    def sampler() -> None:
        n = 0
        while not stop.is_set():
            try:
                batch = table.sample(8, timeout=0.01)
            except RateLimiterTimeout:
                continue
            n += len(batch.keys)
            # Each row's data must belong to its key's item (no torn reads).
            np.testing.assert_array_equal(batch.data["observation"][:, 0],
                                          batch.data["action"].astype(np.float32))
            table.update_priorities(batch.keys, np.abs(batch.data["reward"]) + 0.1)
        sampled.append(n)

    def guarded(fn: Callable[..., None], *args: Any) -> Callable[[], None]:
        def run() -> None:
            try:
                fn(*args)
            except BaseException as e:  # noqa: BLE001
                errors.append(e)
        return run

    samplers = [threading.Thread(target=guarded(sampler)) for _ in range(3)]
    inserters = [threading.Thread(target=guarded(inserter, 1000 * k)) for k in range(4)]
    for t in samplers + inserters:
        t.start()
    for t in inserters:
        t.join(20)
    stop.set()
    for t in samplers:
        t.join(20)
    assert not errors, errors
    assert table.num_inserts == 4 * (180 + 20 * 3)
    assert table.num_samples == sum(sampled) > 0
    assert table.size == table.num_inserts - table.num_deletes <= 64
    snap = table.snapshot()
    assert len(set(snap["keys"].tolist())) == table.size
    assert (snap["times_sampled"] < 4).all()


def test_sample_to_insert_ratio_holds_under_concurrency() -> None:
    limiter = SampleToInsertRatio(samples_per_insert=4.0, min_size_to_sample=20, error_buffer=40)
    table = make_table(limiter=limiter, max_size=200)
    n_inserts = 300

    def produce() -> None:
        for i in range(n_inserts):
            table.insert(item(i), timeout=5)

    def consume() -> None:
        while table.num_samples < n_inserts * 4 - 120:
            table.sample(16, timeout=5)
            diff = table.num_inserts * 4.0 - table.num_samples
            assert limiter.min_diff - 4 <= diff <= limiter.max_diff + 16

    tp, out_p = run_in_thread(produce)
    tc, out_c = run_in_thread(consume)
    assert_released(tp, out_p)
    assert_released(tc, out_c)


# ------------------------------------------------------------------------------------- prefetch


def test_prefetching_iterator_yields_batches_and_closes() -> None:
    table = make_table(limiter=MinSize(2))
    it = PrefetchingIterator(table, batch_size=4, num_prefetch=2)
    t, out = run_in_thread(lambda: next(it))
    assert_blocked(t)
    table.insert_batch(batch_of([0, 1, 2]))
    batch = assert_released(t, out)
    assert batch.keys.shape == (4,) and batch.data["observation"].shape == (4, 3)
    for _, b in zip(range(5), it):
        assert set(b.keys.tolist()) <= {0, 1, 2}
    thread = it._thread
    it.close()
    assert not thread.is_alive()
    with pytest.raises(StopIteration):
        next(it)


def test_prefetching_iterator_reraises_worker_errors() -> None:
    table = make_table(limiter=MinSize(1))
    with PrefetchingIterator(table, batch_size=2, timeout=0.1) as it:
        with pytest.raises(RateLimiterTimeout):
            next(it)
        with pytest.raises(RateLimiterTimeout):  # and keeps raising it
            next(it)
    table.insert(item(0))
    it = PrefetchingIterator(table, batch_size=2)
    next(it)
    table.close()
    with pytest.raises(TableClosedError):
        for _ in range(10):  # drain prefetched batches, then the close surfaces
            next(it)
    # batch_size > max_size * max_times_sampled can never be served: ValueError, not a hang.
    bad_table = make_table(max_times_sampled=1)
    with PrefetchingIterator(bad_table, batch_size=101) as bad, pytest.raises(ValueError):
        next(bad)


def test_prefetching_iterator_stops_when_garbage_collected() -> None:
    table = make_table()
    table.insert(item(0))
    it = PrefetchingIterator(table, batch_size=1)
    next(it)
    thread = it._thread
    del it
    gc.collect()
    thread.join(2.0)
    assert not thread.is_alive()
    # A worker blocked on an empty table also stops.
    it = PrefetchingIterator(make_table(), batch_size=1)
    thread = it._thread
    del it
    gc.collect()
    thread.join(2.0)
    assert not thread.is_alive()


# ---------------------------------------------------------------------------------- data structs


def test_sum_tree_sampling_and_no_drift() -> None:
    tree = SumTree(5)
    rng = np.random.default_rng(0)
    values = rng.uniform(0, 1, 5)
    tree.set(np.arange(5), values)
    for _ in range(2000):  # many updates: sums are recomputed, not accumulated
        i = int(rng.integers(5))
        values[i] = rng.uniform(0, 1e6) if rng.random() < 0.5 else rng.uniform(0, 1e-6)
        tree.set(i, values[i])
    assert tree.total == pytest.approx(values.sum(), rel=1e-12)
    tree.set([1, 3], [0.0, 0.0])
    values[[1, 3]] = 0
    idx = tree.find(np.array([0.0, tree.total * (1 - 1e-17), tree.total, tree.total * 2]))
    assert (values[idx] > 0).all()
    drawn = tree.sample(rng, 10000)
    assert not np.isin(drawn, [1, 3]).any()
    tree.set([2, 2], [5.0, 7.0])  # duplicates: last wins
    assert tree.get(2) == 7.0
    with pytest.raises(ValueError):
        tree.set(0, -1.0)


def test_array_spec_and_table_argument_validation() -> None:
    spec = ArraySpec.from_array(np.zeros((2, 3), np.float32))
    assert spec == ArraySpec((2, 3), np.dtype("float32")) == ArraySpec([2, 3], np.float32)
    assert ArraySpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
    with pytest.raises(ValueError):
        ArraySpec((), object)
    with pytest.raises(ValueError):
        make_table(max_size=0)
    with pytest.raises(ValueError):
        make_table().sample(0)
    table = make_table()
    assert table.info()["size"] == 0 and not table.can_sample(1)
    with pytest.raises(RateLimiterTimeout):
        table.sample(1, timeout=0)
