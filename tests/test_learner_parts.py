"""The learner node's parts that serve every data path: the publishing rule and the actors'
reports (per incarnation)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import ml_collections
import numpy as np
import pytest

from actorq.runtime.breakdown import RuntimeBreakdown
from launchpad_programs.actor_reports import ActorReports
from launchpad_programs.publish_schedule import PublishSchedule


def _config(launcher: str, publish_period: int, pull_period: int = 100):
    return ml_collections.ConfigDict({"launcher": launcher, "publish_period": publish_period,
                                      "pull_period": pull_period})


def test_single_launcher_publishes_on_the_actor_pulls_only():
    schedule = PublishSchedule(_config("single", 0), base_steps=250)  # a resume at step 250
    assert schedule.on_pulls
    assert [schedule.pull_due(s) for s in (299, 300, 301, 399, 420, 450, 500)] == [
        False, True, False, False, True, False, True]
    assert not schedule.due(stale_steps=10_000, now=1e9)  # never by staleness or the clock


def test_a_publish_period_publishes_every_that_many_learner_steps():
    schedule = PublishSchedule(_config("single", 50), base_steps=0)
    assert not schedule.on_pulls and not schedule.pull_due(10_000)
    assert [schedule.due(s, now=0.0) for s in (0, 49, 50, 51)] == [False, False, True, True]


@pytest.mark.parametrize("launcher", ["local", "ray"])
def test_the_default_elsewhere_waits_9x_the_last_publish_cost(launcher):
    schedule = PublishSchedule(_config(launcher, 0), base_steps=0)
    assert not schedule.on_pulls
    schedule.published(start=10.0, end=12.0)  # a publish that took 2 s
    assert not schedule.due(1, now=29.9)
    assert schedule.due(1, now=30.0)
    assert not schedule.due(0, now=1e9)  # nothing new to publish


def _breakdown(inference_s: float, bytes_pulled: int) -> dict:
    b = RuntimeBreakdown(clock=lambda: 0.0)
    b.add("inference", inference_s)
    b.add_bytes_pulled(bytes_pulled)
    b.add_env_steps(10)
    return b.to_dict()


def test_reports_count_every_incarnation_and_its_placement():
    reports = ActorReports(("actor_0", "actor_1"))
    assert reports.min_policy_version(default=7) == 7
    assert math.isnan(reports.mean_startup_s())
    reports.ready("actor_0", {"incarnation": 0, "startup_s": 1.0, "ray_node": "n1",
                              "first_step": {"breakdown": _breakdown(0.1, 100), "num_pulls": 1,
                                             "policy_version": 0}})
    reports.report("actor_0", {"incarnation": 0, "breakdown": _breakdown(2.0, 300),
                               "num_pulls": 3, "policy_version": 40})
    # actor_0 dies and comes back elsewhere; its first step is all it reports.
    reports.ready("actor_0", {"incarnation": 1, "startup_s": 3.0, "host": "h2",
                              "first_step": {"breakdown": _breakdown(0.5, 100), "num_pulls": 1,
                                             "policy_version": 60}})
    reports.ready("actor_1", {"incarnation": 0, "startup_s": 2.0, "ray_node": "n1"})
    reports.report("actor_1", {"incarnation": 0, "breakdown": _breakdown(1.0, 200),
                               "num_pulls": 2, "policy_version": 55})
    reports.report("evaluator", {"incarnation": 0, "breakdown": _breakdown(0.0, 50),
                                 "num_pulls": 1, "policy_version": 10})
    # The latest incarnation of each node: actor_0 at 60, actor_1 at 55, the evaluator at 10.
    assert reports.min_policy_version(default=99) == 10
    assert reports.mean_startup_s() == pytest.approx(2.0)  # actors only
    assert reports.pull_totals() == (650, 7)  # every node and incarnation, the evaluator too
    assert reports.bytes_pulled_per_node() == {"n1": 500, "h2": 100, "unknown": 50}
    summaries = reports.breakdowns(["int8", "fp32"])
    assert [summaries[a]["precision"] for a in ("actor_0", "actor_1")] == ["int8", "fp32"]
    assert summaries["actor_0"]["incarnations"] == 2 and summaries["actor_0"]["num_pulls"] == 4
    assert summaries["actor_0"]["bytes_pulled"] == 400  # both incarnations, merged
    assert summaries["actor_0"]["ray_node"] == "h2"  # where the last incarnation runs
    assert set(summaries) == {"actor_0", "actor_1"}


class _Learner:
    def __init__(self, value: float):
        self.params = {"w": np.full((3,), value, np.float32)}

    def state(self):
        return self.params

    def restore(self, state):
        self.params = {"w": np.asarray(state["w"])}


def test_checkpoints_follow_the_actor_step_schedule_and_restore(tmp_path):
    from launchpad_programs.learner_checkpoints import LearnerCheckpoints

    run_dir = SimpleNamespace(checkpoints=tmp_path / "checkpoints")
    config = ml_collections.ConfigDict({"keep_checkpoints": 2, "checkpoint_replay": False,
                                        "checkpoint_every_steps": 100})
    events: list[dict] = []
    checkpoints = LearnerCheckpoints(run_dir, config, SimpleNamespace(write=events.append))
    checkpoints.start(0)
    assert [checkpoints.due(s) for s in (99, 100)] == [False, True]
    checkpoints.save(_Learner(2.0), {"actor_steps": 250, "episodes": 3}, table=None)
    assert [checkpoints.due(s) for s in (299, 300)] == [False, True]  # a whole interval on
    checkpoints.close()

    again = LearnerCheckpoints(run_dir, config, SimpleNamespace(write=events.append))
    learner = _Learner(0.0)
    restored = again.restore(learner, table=None)
    again.close()
    assert restored.step == 250 and restored.counters["episodes"] == 3
    np.testing.assert_array_equal(learner.params["w"], [2.0, 2.0, 2.0])
    assert events == []  # nothing damaged, nothing skipped
