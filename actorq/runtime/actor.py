"""A feed-forward actor: quantized policy runtime + exploration + adder."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import dm_env
import numpy as np

from actorq.replay.adders import NStepTransitionAdder
from actorq.runtime.breakdown import RuntimeBreakdown
from actorq.runtime.policy_runtime import PolicyRuntime
from actorq.runtime.variable_client import VariableClient

# (network outputs [batch, k], actor step) -> actions [batch, ...]
Exploration = Callable[[np.ndarray, int], np.ndarray]


class FeedForwardActor:
    """Runs the loaded policy package; explores; writes n-step transitions.

    Every transition carries the ``policy_version`` it was collected with so the learner side
    can measure policy lag.
    """

    def __init__(
        self,
        runtime: PolicyRuntime,
        client: VariableClient,
        exploration: Exploration,
        adder: NStepTransitionAdder | None = None,
        breakdown: RuntimeBreakdown | None = None,
    ) -> None:
        self._runtime = runtime
        self._client = client
        self._exploration = exploration
        self._adder = adder
        self._breakdown = breakdown if breakdown is not None else RuntimeBreakdown()
        self._steps = 0

    @property
    def policy_version(self) -> int:
        return self._client.version

    def select_action(self, observation: np.ndarray) -> np.ndarray:
        if not self._client.has_policy:
            self._client.update(wait=True)
            if not self._client.has_policy:
                raise RuntimeError("no policy has been published yet")
        with self._breakdown.time("inference"):
            outputs = self._runtime(observation[None].astype(np.float32, copy=False))
        action = self._exploration(outputs, self._steps)[0]
        self._steps += 1
        return action

    def observe_first(self, timestep: dm_env.TimeStep) -> None:
        if self._adder is not None:
            self._adder.add_first(timestep)

    def observe(self, action: np.ndarray, next_timestep: dm_env.TimeStep) -> None:
        if self._adder is not None:
            extras: Mapping[str, np.ndarray] = {
                "policy_version": np.asarray(self._client.version, np.int32)
            }
            self._adder.add(action, next_timestep, extras=extras)

    def update(self, wait: bool = False) -> None:
        self._client.update(wait=wait)
