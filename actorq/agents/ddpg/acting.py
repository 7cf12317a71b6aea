"""DDPG actors: uniform random actions first, then the tanh policy plus Gaussian or
Ornstein-Uhlenbeck noise, clipped to [-1, 1]; optionally a floor on the training rewards."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dm_env
import numpy as np

from actorq.core import Adder, Exploration


class RewardFloorAdder:
    """An :class:`~actorq.core.Adder` that raises each reward below ``floor`` to ``floor``
    before the wrapped adder sees it. Only the table's items change: the environment, and so
    every evaluation return, keeps its own rewards."""

    def __init__(self, adder: Adder, floor: float) -> None:
        self._adder = adder
        self._floor = float(floor)

    def add_first(self, timestep: dm_env.TimeStep) -> None:
        self._adder.add_first(timestep)

    def add(self, action: Any, next_timestep: dm_env.TimeStep,
            extras: Mapping[str, Any] | None = None) -> None:
        if next_timestep.reward is not None and next_timestep.reward < self._floor:
            next_timestep = next_timestep._replace(reward=np.float32(self._floor))
        self._adder.add(action, next_timestep, extras)

    def reset(self) -> None:
        self._adder.reset()


def ddpg_exploration(kind: str, sigma: float, theta: float, dt: float, uniform_steps: int,
                     seed: int) -> Exploration:
    """The exploration of one actor; ``step`` counts its env steps (all its environments)."""
    rng = np.random.default_rng(seed)
    state: dict[str, np.ndarray] = {}

    def explore(outputs: np.ndarray, step: int) -> np.ndarray:
        if step < uniform_steps:
            return rng.uniform(-1.0, 1.0, size=outputs.shape).astype(np.float32)
        if kind == "ou":
            x = state.get("ou", np.zeros_like(outputs))
            if x.shape != outputs.shape:
                x = np.zeros_like(outputs)
            x = x - theta * x * dt + sigma * np.sqrt(dt) * rng.standard_normal(outputs.shape)
            state["ou"] = x
            noise = x
        else:
            noise = rng.normal(scale=sigma, size=outputs.shape) if sigma > 0 else 0.0
        return np.clip(outputs + noise, -1.0, 1.0).astype(np.float32)

    return explore
