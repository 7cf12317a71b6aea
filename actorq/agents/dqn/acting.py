"""DQN actors: epsilon-greedy over the quantized Q-network's outputs."""

from __future__ import annotations

import numpy as np

from actorq.core import Exploration


def actor_epsilon(epsilon_min: float, epsilon_max: float, actor_index: int,
                  num_actors: int) -> float:
    """Final epsilon of actor ``i`` of ``N``, spread uniformly over [epsilon_min, epsilon_max]."""
    if not 0 <= actor_index < max(num_actors, 1):
        raise ValueError(f"actor_index {actor_index} out of range for {num_actors} actors")
    if num_actors <= 1:
        return epsilon_min
    return epsilon_min + (epsilon_max - epsilon_min) * actor_index / (num_actors - 1)


def epsilon_greedy(
    epsilon_start: float, epsilon_final: float, decay_steps: int, seed: int
) -> Exploration:
    """Linear epsilon decay over ``decay_steps`` actor steps, then constant."""
    rng = np.random.default_rng(seed)

    def explore(q_values: np.ndarray, step: int) -> np.ndarray:
        frac = min(1.0, step / max(decay_steps, 1))
        epsilon = epsilon_start + frac * (epsilon_final - epsilon_start)
        greedy = np.argmax(q_values, axis=-1)
        random = rng.integers(q_values.shape[-1], size=greedy.shape)
        explore_mask = rng.random(greedy.shape) < epsilon
        return np.where(explore_mask, random, greedy).astype(np.int32)

    return explore


def greedy_action(q_values: np.ndarray) -> np.ndarray:
    """Evaluation: the argmax action."""
    return np.argmax(q_values, axis=-1).astype(np.int32)
