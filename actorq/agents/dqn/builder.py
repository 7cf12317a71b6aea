"""DQN builder: what a launcher needs to assemble DQN nodes, without knowing DQN."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from actorq.agents.builder import AgentBuilder
from actorq.agents.dqn.acting import actor_epsilon, epsilon_greedy, greedy_action
from actorq.core import Exploration

if TYPE_CHECKING:  # imported when first needed: actor processes never import JAX
    from actorq.networks.mlp import MLP


class DQNBuilder(AgentBuilder):
    """DQN's learner, epsilon-greedy exploration and replay for one discrete-action task."""

    name = "dqn"
    action_kind = "discrete"
    networks_factory = "actorq.agents.dqn.networks:make_networks"
    pixel_observations = True
    learner_factory = "actorq.agents.dqn.learning:DQNLearner"
    action_value_head = True

    @property
    def uses_priorities(self) -> bool:
        return self.config.prioritized

    @property
    def num_actions(self) -> int:
        return self.action_size

    @property
    def policy_network(self) -> MLP:
        return self.networks.q_network

    def learner_options(
        self,
        update_priorities: Callable[[np.ndarray, np.ndarray], None] | None,
        replay_size: Callable[[], int] | None,
    ) -> dict[str, Any]:
        """Prioritized replay: the learner writes priorities back and reads the table size."""
        return {"update_priorities": update_priorities, "replay_size": replay_size}

    def make_exploration(self, actor_index: int, num_actors: int, seed: int) -> Exploration:
        final = actor_epsilon(
            self.config.epsilon_min, self.config.epsilon_max, actor_index, num_actors
        )
        return epsilon_greedy(
            self.config.epsilon_start, final, self.config.epsilon_decay_steps, seed
        )

    def evaluation_action(self, outputs: np.ndarray) -> np.ndarray:
        return greedy_action(outputs)
