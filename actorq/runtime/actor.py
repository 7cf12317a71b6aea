"""A feed-forward actor: quantized policy runtime + exploration + one adder per environment."""

from __future__ import annotations

from collections.abc import Sequence

import dm_env
import numpy as np

from actorq.core import Adder, Exploration
from actorq.runtime import policy_head
from actorq.runtime.breakdown import RuntimeBreakdown
from actorq.runtime.policy_runtime import PolicyRuntime
from actorq.runtime.variable_client import VariableClient


class FeedForwardActor:
    """Runs the loaded policy package; explores; writes experience through its adders.

    It can act for several environments at once (``envs_per_actor``): one policy call on the
    stacked observations, one adder per environment (``env_index`` picks it). Every item carries
    the ``policy_version`` it was collected with so the learner side can measure policy lag.

    With ``exploration=None`` the package's stochastic head (categorical or Gaussian) samples
    the actions, and each step also carries ``behaviour_logprob``: the log-probability under
    the deployed (possibly quantized) package of the action it took. A gSDE head's noise is
    held for ``head_noise_period`` steps per environment.

    Steps counted by :meth:`update` reach the client right before the next action, so a pull
    that falls due at the end of a step is taken then. Under the single launcher the learner
    steps and publishes in between: an on-policy actor then acts with the version that learned
    from the unroll it has just sent (policy lag 0, as in PPO), not with the one before it.
    """

    def __init__(
        self,
        runtime: PolicyRuntime,
        client: VariableClient,
        exploration: Exploration | None,
        adders: Sequence[Adder] = (),
        breakdown: RuntimeBreakdown | None = None,
        seed: int = 0,
        head_noise_period: int | None = None,
    ) -> None:
        self._runtime = runtime
        self._client = client
        self._exploration = exploration
        self._adders = list(adders)
        self._breakdown = breakdown if breakdown is not None else RuntimeBreakdown()
        self._steps = 0
        self._rng = np.random.default_rng(seed)
        self._logprobs: np.ndarray | None = None
        self._head_noise = (policy_head.GsdeNoise(head_noise_period)
                            if head_noise_period is not None else None)
        self._uncounted_steps = 0

    @property
    def policy_version(self) -> int:
        return self._client.version

    def select_actions(self, observations: np.ndarray) -> np.ndarray:
        """Actions for a batch of observations ``[k, ...]`` (one per environment), in one call."""
        if self._uncounted_steps or not self._client.has_policy:
            self._count_steps(wait=not self._client.has_policy)
            if not self._client.has_policy:
                raise RuntimeError("no policy has been published yet")
        # The runtime prepares them for its package (flat float32, or uint8 pixel codes).
        with self._breakdown.time("inference"):
            outputs = self._runtime(observations)
        if self._exploration is None:
            actions, self._logprobs = policy_head.sample(self._client.package, outputs,
                                                         self._rng, self._head_noise)
        else:
            # The exploration schedule (e.g. epsilon decay) counts environment steps.
            actions = self._exploration(outputs, self._steps)
        self._steps += len(observations)
        return actions

    def select_action(self, observation: np.ndarray) -> np.ndarray:
        return self.select_actions(observation[None])[0]

    def observe_first(self, timestep: dm_env.TimeStep, env_index: int = 0) -> None:
        if self._adders:
            self._adders[env_index].add_first(timestep)

    def observe(self, action: np.ndarray, next_timestep: dm_env.TimeStep,
                env_index: int = 0) -> None:
        if self._adders:
            extras: dict[str, np.ndarray] = {
                "policy_version": np.asarray(self._client.version, np.int32)
            }
            if self._logprobs is not None:
                extras["behaviour_logprob"] = self._logprobs[env_index]
            self._adders[env_index].add(action, next_timestep, extras=extras)

    def update(self, wait: bool = False, steps: int = 1) -> None:
        """Counts ``steps`` actor steps toward the next pull, which is taken right before the
        next action (``wait``: pull now)."""
        self._uncounted_steps += steps
        if wait:
            self._count_steps(wait=True)

    def _count_steps(self, wait: bool) -> None:
        """Hands the counted steps to the client, which pulls if that makes a pull due."""
        steps, self._uncounted_steps = self._uncounted_steps, 0
        self._client.update(wait=wait, steps=steps)
