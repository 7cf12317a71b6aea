"""DQN hyperparameters (double Q-learning, Huber loss, n-step, optional prioritized replay)."""

from __future__ import annotations

import dataclasses

from actorq.networks.sizes import PAPER_POLICY_SIZES


@dataclasses.dataclass(frozen=True)
class DQNConfig:
    """Defaults follow the QuaRL paper's Gym setup (3 x 2048 Q-network, Adam 1e-4, batch 256)."""

    hidden_sizes: tuple[int, ...] = PAPER_POLICY_SIZES
    n_step: int = 1
    discount: float = 0.99
    learning_rate: float = 1e-4
    batch_size: int = 256
    target_update_period: int = 100
    sgd_steps_per_call: int = 1
    huber_delta: float = 1.0
    max_gradient_norm: float = 10.0
    adam_epsilon: float = 1e-8
    # Epsilon-greedy: linear decay from epsilon_start to the actor's final epsilon over
    # epsilon_decay_steps actor steps; actor i of N ends at a value spread over
    # [epsilon_min, epsilon_max] (one actor: epsilon_min).
    epsilon_start: float = 1.0
    epsilon_min: float = 0.01
    epsilon_max: float = 0.1
    epsilon_decay_steps: int = 10_000
    prioritized: bool = False
    importance_beta: float = 0.4
    priority_epsilon: float = 1e-3
    qat_bits: int | None = None
    qat_delay_steps: int = 0

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.sgd_steps_per_call < 1 or self.n_step < 1:
            raise ValueError("batch_size, sgd_steps_per_call and n_step must be >= 1")
        if not 0 <= self.epsilon_min <= self.epsilon_max <= 1:
            raise ValueError("need 0 <= epsilon_min <= epsilon_max <= 1")
