"""Actor-side pieces of the on-policy agents: reward scaling per environment.

Observations are normalized by the package (the learner's statistics); rewards are scaled where
they arise, per environment, as SB3's ``VecNormalize`` does (the RL Zoo's ``normalize: true``):
each reward is divided by the running standard deviation of that environment's discounted
return, which restarts after every episode end, and clipped to +-10.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dm_env
import numpy as np
from gymnasium.wrappers.utils import RunningMeanStd

from actorq.replay.adders import UnrollAdder

REWARD_CLIP = 10.0
EPSILON = 1e-8


class RewardScalingAdder:
    """An :class:`UnrollAdder` whose rewards are scaled by the running std of the discounted
    return of this environment (SB3 ``VecNormalize`` semantics: the return restarts after each
    LAST step, termination or truncation)."""

    def __init__(self, adder: UnrollAdder, discount: float) -> None:
        self._adder = adder
        self._gamma = float(discount)
        self._return = 0.0
        self._moments = RunningMeanStd(shape=())

    def add_first(self, timestep: dm_env.TimeStep) -> None:
        self._adder.add_first(timestep)

    def add(self, action: Any, next_timestep: dm_env.TimeStep,
            extras: Mapping[str, Any] | None = None) -> None:
        reward = float(next_timestep.reward)
        self._return = self._return * self._gamma + reward
        self._moments.update(np.array([self._return]))
        scaled = np.clip(reward / np.sqrt(self._moments.var + EPSILON), -REWARD_CLIP, REWARD_CLIP)
        if next_timestep.last():
            self._return = 0.0
        self._adder.add(action, next_timestep._replace(reward=np.float32(scaled)), extras)

    def reset(self) -> None:
        self._adder.reset()
