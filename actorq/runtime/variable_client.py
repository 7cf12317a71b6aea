"""Actor side of the weights channel: pull the published package every ``pull_period`` steps."""

from __future__ import annotations

from actorq.core import VariableSource
from actorq.quantization.package import PolicyPackage
from actorq.runtime.breakdown import RuntimeBreakdown
from actorq.runtime.policy_runtime import PolicyRuntime


class VariableClient:
    """Keeps ``runtime`` loaded with a recent policy from ``source``.

    Pulls are synchronous, as in the paper: every ``pull_period`` actor steps counted by
    :meth:`update` the client fetches the newest package bytes (``pull``), unpacks them
    (``deserialize``) and loads them into the runtime (``load``); each is timed in
    ``breakdown`` with the bytes moved.
    """

    def __init__(
        self,
        source: VariableSource,
        runtime: PolicyRuntime,
        pull_period: int,
        breakdown: RuntimeBreakdown | None = None,
        expected_shape: tuple[int, int] | None = None,
    ) -> None:
        if pull_period < 1:
            raise ValueError(f"pull_period must be >= 1, got {pull_period}")
        self._source = source
        self._runtime = runtime
        self._pull_period = pull_period
        self._breakdown = breakdown if breakdown is not None else RuntimeBreakdown()
        self._expected_shape = expected_shape
        self._steps = 0
        self.version = -1
        self.num_pulls = 0
        self.package: PolicyPackage | None = None

    @property
    def has_policy(self) -> bool:
        return self.package is not None

    def update(self, wait: bool = False, steps: int = 1) -> bool:
        """Counts ``steps`` actor steps (an actor with k environments takes k per call); pulls
        when that crosses a multiple of ``pull_period`` (or when ``wait``). Returns whether it
        loaded a new package."""
        before = self._steps
        self._steps += steps
        due = self._steps // self._pull_period > before // self._pull_period
        if not wait and self.has_policy and not due:
            return False
        return self.pull()

    def pull(self) -> bool:
        """Fetches and loads the newest package if it is newer than the loaded one."""
        with self._breakdown.time("pull"):
            latest = self._source.latest()
        if latest is None or latest[0] <= self.version:
            return False
        version, data = latest
        self._breakdown.add_bytes_pulled(len(data))
        self.num_pulls += 1
        with self._breakdown.time("deserialize"):
            package = PolicyPackage.from_bytes(data)
            if self._expected_shape is not None:
                package.check_compatible(*self._expected_shape)
        with self._breakdown.time("load"):
            self._runtime.load(package)
        self.package = package
        self.version = version
        return True
