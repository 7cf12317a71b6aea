"""D4PG actors: deterministic policy output + Gaussian exploration, clipped to [-1, 1]."""

from __future__ import annotations

import numpy as np

from actorq.core import Exploration


def actor_sigma(sigma_max: float, actor_index: int, num_actors: int) -> float:
    """Exploration noise of actor ``i`` of ``N``: spread uniformly over (0, sigma_max]."""
    if not 0 <= actor_index < max(num_actors, 1):
        raise ValueError(f"actor_index {actor_index} out of range for {num_actors} actors")
    return sigma_max * (actor_index + 1) / max(num_actors, 1)


def gaussian_exploration(sigma: float, seed: int) -> Exploration:
    """Adds N(0, sigma^2) noise to the policy's tanh actions and clips to [-1, 1]."""
    rng = np.random.default_rng(seed)

    def explore(outputs: np.ndarray, step: int) -> np.ndarray:
        del step
        noise = rng.normal(scale=sigma, size=outputs.shape) if sigma > 0 else 0.0
        return np.clip(outputs + noise, -1.0, 1.0).astype(np.float32)

    return explore


def greedy_action(outputs: np.ndarray) -> np.ndarray:
    """Evaluation: the policy's own action (no noise)."""
    return np.asarray(outputs, np.float32)
