"""Steps an environment with an actor, timing env and counting episodes."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

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

    It steps one environment, or several with one batched policy call per step
    (``envs_per_actor``). Each environment resets lazily: a step first resets those whose
    episode ended, as a single ``dm_env`` loop would.
    """

    def __init__(
        self,
        environments: dm_env.Environment | Sequence[dm_env.Environment],
        actor: Actor,
        breakdown: RuntimeBreakdown | None = None,
        on_episode: Callable[[EpisodeResult], None] | None = None,
    ) -> None:
        if not isinstance(environments, Sequence):
            environments = [environments]
        self._envs = list(environments)
        if not self._envs:
            raise ValueError("EnvironmentLoop needs at least one environment")
        self._actor = actor
        self._breakdown = breakdown if breakdown is not None else RuntimeBreakdown()
        self._on_episode = on_episode
        k = len(self._envs)
        self._timesteps: list[dm_env.TimeStep | None] = [None] * k
        self._returns = [0.0] * k
        self._lengths = [0] * k
        self._starts = [time.perf_counter()] * k
        self.steps = 0
        self.episodes = 0

    @property
    def num_envs(self) -> int:
        return len(self._envs)

    def step(self, max_transitions: int | None = None) -> list[EpisodeResult]:
        """One step of every environment (of the first ``max_transitions`` of them, if given:
        lets a driver stop exactly at a step budget). Returns the episodes this step finished."""
        k = len(self._envs) if max_transitions is None else min(len(self._envs), max_transitions)
        if k < 1:
            return []
        for i in range(k):
            timestep = self._timesteps[i]
            if timestep is None or timestep.last():
                with self._breakdown.time("env"):
                    timestep = self._timesteps[i] = self._envs[i].reset()
                self._actor.observe_first(timestep, i)
                self._returns[i], self._lengths[i] = 0.0, 0
                self._starts[i] = time.perf_counter()
        observations = np.stack([np.asarray(self._timesteps[i].observation) for i in range(k)])
        actions = self._actor.select_actions(observations)
        with self._breakdown.time("env"):
            for i in range(k):
                self._timesteps[i] = self._envs[i].step(actions[i])
        finished = []
        for i in range(k):
            timestep = self._timesteps[i]
            self._actor.observe(actions[i], timestep, i)
            self._returns[i] += float(timestep.reward or 0.0)
            self._lengths[i] += 1
            if timestep.last():
                self.episodes += 1
                finished.append(EpisodeResult(self._returns[i], self._lengths[i],
                                              time.perf_counter() - self._starts[i]))
        self._actor.update(steps=k)
        self._breakdown.add_env_steps(k)
        self.steps += k
        if self._on_episode is not None:
            for result in finished:
                self._on_episode(result)
        return finished


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
