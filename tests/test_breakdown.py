"""Tests for the per-actor runtime breakdown."""

from __future__ import annotations

import json

import pytest

from actorq.runtime.breakdown import SECTIONS, RuntimeBreakdown, markdown_table


class FakeClock:
    """A clock the test advances by hand: timing assertions then hold on any machine."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_time_accumulates_what_the_clock_says() -> None:
    clock = FakeClock()
    breakdown = RuntimeBreakdown(clock=clock)
    for _ in range(2):
        with breakdown.time("env"):
            clock.now += 0.05
        clock.now += 0.01  # untimed work between blocks
    summary = breakdown.summary()
    assert summary["env_calls"] == 2
    assert summary["env_s"] == pytest.approx(0.1)
    assert summary["env_mean_ms"] == pytest.approx(50.0)
    assert summary["inference_calls"] == 0 and summary["inference_mean_ms"] == 0.0
    assert summary["wall_s"] == pytest.approx(0.12)
    assert summary["timed_s"] == pytest.approx(summary["env_s"])


def test_blocked_is_its_own_section() -> None:
    clock = FakeClock()
    breakdown = RuntimeBreakdown(clock=clock)
    with breakdown.time("blocked"):
        clock.now += 3.0
    with breakdown.time("inference"):
        clock.now += 1.0
    summary = breakdown.summary()
    assert summary["blocked_s"] == pytest.approx(3.0) and summary["blocked_fraction"] == 0.75
    assert "blocked s (%)" in markdown_table({"actor_0": summary})


def test_time_counts_blocks_that_raise() -> None:
    breakdown = RuntimeBreakdown()
    with pytest.raises(ZeroDivisionError), breakdown.time("inference"):
        _ = 1 / 0
    assert breakdown.calls("inference") == 1


def test_fractions_sum_to_one_and_throughput() -> None:
    breakdown = RuntimeBreakdown()
    breakdown.add("inference", 3.0, calls=300)
    breakdown.add("env", 1.0, calls=300)
    breakdown.add("pull", 0.5)
    breakdown.add("deserialize", 0.25)
    breakdown.add("load", 0.25)
    breakdown.add_env_steps(300)
    breakdown.add_bytes_pulled(1 << 20)
    summary = breakdown.summary()
    assert sum(summary[f"{s}_fraction"] for s in SECTIONS) == pytest.approx(1.0)
    assert summary["inference_fraction"] == pytest.approx(0.6)
    assert summary["inference_mean_ms"] == pytest.approx(10.0)
    assert summary["timed_s"] == pytest.approx(5.0)
    assert summary["bytes_pulled"] == 1 << 20 and summary["env_steps"] == 300
    assert summary["env_steps_per_s"] == pytest.approx(300 / summary["wall_s"], rel=0.05)
    # Flat dict of plain scalars: loggable as is.
    assert all(isinstance(v, int | float) for v in summary.values())


def test_empty_breakdown_has_zero_fractions() -> None:
    summary = RuntimeBreakdown().summary()
    assert all(summary[f"{s}_fraction"] == 0.0 for s in SECTIONS)


def test_reset_zeroes_and_restarts_wall_clock() -> None:
    clock = FakeClock()
    breakdown = RuntimeBreakdown(clock=clock)
    breakdown.add("env", 1.0)
    breakdown.add_env_steps(5)
    clock.now += 5.0
    breakdown.reset()
    assert breakdown.seconds("env") == 0.0 and breakdown.env_steps == 0
    assert breakdown.wall_s == 0.0
    clock.now += 2.0
    assert breakdown.wall_s == 2.0


def test_merge_sums_counts_and_combines_wall_time() -> None:
    a = RuntimeBreakdown.from_dict(
        {"seconds": {"inference": 1.0}, "calls": {"inference": 10}, "env_steps": 10, "wall_s": 4.0}
    )
    b = RuntimeBreakdown.from_dict(
        {
            "seconds": {"inference": 2.0, "pull": 0.5},
            "calls": {"inference": 20, "pull": 1},
            "bytes_pulled": 100,
            "env_steps": 30,
            "wall_s": 2.0,
        }
    )
    merged = a.merge(b)
    assert merged.seconds("inference") == 3.0 and merged.calls("inference") == 30
    assert merged.seconds("pull") == 0.5 and merged.bytes_pulled == 100
    assert merged.env_steps == 40
    assert merged.wall_s == 4.0  # concurrent actors: max
    assert merged.summary()["env_steps_per_s"] == pytest.approx(10.0)
    assert a.merge(b, concurrent=False).wall_s == 6.0  # consecutive periods: sum
    assert a.seconds("inference") == 1.0 and b.env_steps == 30  # inputs untouched


def test_round_trip_through_json() -> None:
    clock = FakeClock()
    breakdown = RuntimeBreakdown(clock=clock)
    with breakdown.time("deserialize"):
        clock.now += 0.5
    breakdown.add("load", 0.125, calls=2)
    breakdown.add_bytes_pulled(4096)
    breakdown.add_env_steps(7)
    shipped = json.loads(json.dumps(breakdown.to_dict()))
    restored = RuntimeBreakdown.from_dict(shipped)
    assert restored.to_dict() == shipped
    summary = restored.summary()
    clock.now += 10.0
    assert restored.summary() == summary  # snapshot: wall time frozen
    assert summary["load_mean_ms"] == pytest.approx(62.5)


def test_markdown_table_has_every_actor_and_section() -> None:
    actors = {}
    for i in range(3):
        breakdown = RuntimeBreakdown()
        breakdown.add("inference", 1.0 + i)
        breakdown.add("env", 1.0)
        breakdown.add_bytes_pulled(3 * 1024 * 1024)
        breakdown.add_env_steps(1000)
        actors[f"actor_{i}"] = breakdown.summary()
    actors["actor_3"] = RuntimeBreakdown()  # objects are summarised too
    table = markdown_table(actors)
    lines = table.strip().splitlines()
    assert len(lines) == 2 + 4
    header = lines[0]
    for section in SECTIONS:
        assert section in header
    assert "bytes pulled" in header and "steps/s" in header
    for i in range(4):
        assert sum(line.startswith(f"| actor_{i} ") for line in lines) == 1
    assert "(50.0%)" in lines[2] and "3.00 MiB" in lines[2]
    assert all(line.count("|") == header.count("|") for line in lines)


def test_unknown_section_fails() -> None:
    breakdown = RuntimeBreakdown()
    with pytest.raises(ValueError, match="Unknown section"):
        breakdown.time("training")
    with pytest.raises(ValueError, match="Unknown section"):
        breakdown.add("training", 1.0)
    with pytest.raises(ValueError, match="Unknown section"):
        RuntimeBreakdown.from_dict({"seconds": {"training": 1.0}})
    with pytest.raises(ValueError):
        breakdown.add_env_steps(-1)
