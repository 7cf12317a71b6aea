"""What the actor and evaluator nodes report to the learner node, kept per incarnation.

A node restarted after a crash is a new incarnation: its runtime breakdown, pull counts and
placement are kept beside the earlier ones, so the run's totals count every incarnation and the
per-actor breakdown merges them as consecutive periods.
"""

from __future__ import annotations

from typing import Any

from actorq.runtime.breakdown import RuntimeBreakdown


class ActorReports:
    """Reports (``report`` messages and ``ready`` events) of the nodes feeding one learner."""

    def __init__(self, actors: tuple[str, ...]) -> None:
        self._actors = actors
        self._reports: dict[str, dict[int, dict[str, Any]]] = {}  # node -> incarnation -> report
        self._placement: dict[str, dict[int, str]] = {}  # actor -> incarnation -> cluster node
        self._startup: list[float] = []

    def report(self, node: str, payload: dict[str, Any]) -> None:
        """A node's latest runtime report (its breakdown, pulls and policy version so far)."""
        self._reports.setdefault(node, {})[int(payload.get("incarnation", 0))] = payload

    def ready(self, node: str, event: dict[str, Any]) -> None:
        """A node's ``ready`` event: an actor's start-up time and placement, and the report of
        its first step (which counts even if the node dies before it reports)."""
        incarnation = int(event.get("incarnation", 0))
        if node in self._actors:
            self._startup.append(float(event.get("startup_s", float("nan"))))
            # Where this incarnation runs: its Ray node, or its host.
            self._placement.setdefault(node, {})[incarnation] = str(
                event.get("ray_node") or event.get("host", ""))
        if "first_step" in event:
            self._reports.setdefault(node, {}).setdefault(
                incarnation, {**event["first_step"], "incarnation": incarnation})

    def min_policy_version(self, default: int) -> int:
        """The oldest policy version any node's latest incarnation acts with (``default``
        before any has reported one)."""
        versions = [max(r.items())[1].get("policy_version", -1)
                    for r in self._reports.values() if r]
        versions = [v for v in versions if v >= 0]
        return min(versions) if versions else default

    def mean_startup_s(self) -> float:
        return sum(self._startup) / len(self._startup) if self._startup else float("nan")

    def pull_totals(self) -> tuple[int, int]:
        """Package bytes pulled and pulls taken by every node and incarnation."""
        reports = [r for per_node in self._reports.values() for r in per_node.values()]
        return (sum(int(r["breakdown"].get("bytes_pulled", 0)) for r in reports),
                sum(int(r.get("num_pulls", 0)) for r in reports))

    def bytes_pulled_per_node(self) -> dict[str, int]:
        """Package bytes pulled per cluster node (Ray node id, or host), all incarnations."""
        totals: dict[str, int] = {}
        for actor, per_incarnation in self._reports.items():
            for incarnation, report in per_incarnation.items():
                where = self._placement.get(actor, {}).get(incarnation, "unknown")
                totals[where] = (totals.get(where, 0)
                                 + int(report["breakdown"].get("bytes_pulled", 0)))
        return totals

    def breakdowns(self, precisions: list[str]) -> dict[str, dict[str, Any]]:
        """Per actor (``precisions[i]`` is actor i's): the breakdown of all its incarnations
        merged, its pulls, incarnations and last placement."""
        summaries: dict[str, dict[str, Any]] = {}
        for index, node in enumerate(self._actors):
            total: RuntimeBreakdown | None = None
            for _, report in sorted(self._reports.get(node, {}).items()):
                part = RuntimeBreakdown.from_dict(report["breakdown"])
                total = part if total is None else total.merge(part, concurrent=False)
            merged = total if total is not None else RuntimeBreakdown.from_dict({})
            summaries[node] = {"precision": precisions[index], **merged.summary()}
        for node, per_node in self._reports.items():
            if node in summaries and per_node:
                summaries[node]["num_pulls"] = sum(int(r.get("num_pulls", 0))
                                                   for r in per_node.values())
                summaries[node]["incarnations"] = len(per_node)
        for node, placement in self._placement.items():
            summaries[node]["ray_node"] = placement[max(placement)]  # the last incarnation's
        return summaries
