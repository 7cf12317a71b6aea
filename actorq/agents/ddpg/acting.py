"""DDPG actors: uniform random actions first, then the tanh policy plus Gaussian or
Ornstein-Uhlenbeck noise, clipped to [-1, 1]."""

from __future__ import annotations

import numpy as np

from actorq.core import Exploration


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
