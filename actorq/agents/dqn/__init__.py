"""DQN (double Q-learning, n-step, optional prioritized replay) for Gym classic control."""

from actorq.agents.dqn.builder import DQNBuilder
from actorq.agents.dqn.config import DQNConfig
from actorq.agents.dqn.learning import DQNLearner, double_q_loss

__all__ = ["DQNBuilder", "DQNConfig", "DQNLearner", "double_q_loss"]
