"""Steps an environment with an actor, timing env and counting episodes."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import dm_env
import numpy as np

from actorq.core import Actor
from actorq.runtime.breakdown import RuntimeBreakdown


@dataclasses.dataclass
class EpisodeResult:
    """One finished episode."""

    episode_return: float
    episode_length: int
    wall_time_s: float


class EnvironmentLoop:
    """Acme-style loop, but step-driven so a driver can interleave it with learning.

    ``step()`` advances one environment step (resetting between episodes) and returns the
    finished episode's result when that step ended one.
    """

    def __init__(
        self,
        environment: dm_env.Environment,
        actor: Actor,
        breakdown: RuntimeBreakdown | None = None,
        on_episode: Callable[[EpisodeResult], None] | None = None,
    ) -> None:
        self._env = environment
        self._actor = actor
        self._breakdown = breakdown if breakdown is not None else RuntimeBreakdown()
        self._on_episode = on_episode
        self._timestep: dm_env.TimeStep | None = None
        self._episode_return = 0.0
        self._episode_length = 0
        self._episode_start = time.perf_counter()
        self.steps = 0
        self.episodes = 0

    def step(self) -> EpisodeResult | None:
        if self._timestep is None or self._timestep.last():
            with self._breakdown.time("env"):
                self._timestep = self._env.reset()
            self._actor.observe_first(self._timestep)
            self._episode_return, self._episode_length = 0.0, 0
            self._episode_start = time.perf_counter()
        action = self._actor.select_action(np.asarray(self._timestep.observation))
        with self._breakdown.time("env"):
            self._timestep = self._env.step(action)
        self._actor.observe(action, self._timestep)
        self._actor.update()
        self._breakdown.add_env_steps(1)
        self.steps += 1
        self._episode_return += float(self._timestep.reward or 0.0)
        self._episode_length += 1
        if not self._timestep.last():
            return None
        self.episodes += 1
        result = EpisodeResult(
            self._episode_return, self._episode_length, time.perf_counter() - self._episode_start
        )
        if self._on_episode is not None:
            self._on_episode(result)
        return result


def evaluate(
    environment: dm_env.Environment,
    policy: Callable[[np.ndarray], np.ndarray],
    num_episodes: int,
) -> list[float]:
    """Runs ``num_episodes`` noise-free episodes of ``policy`` (obs -> action); returns returns."""
    if num_episodes < 1:
        raise ValueError(f"num_episodes must be >= 1, got {num_episodes}")
    returns = []
    for _ in range(num_episodes):
        timestep = environment.reset()
        total = 0.0
        while not timestep.last():
            timestep = environment.step(policy(np.asarray(timestep.observation)))
            total += float(timestep.reward or 0.0)
        returns.append(total)
    return returns
