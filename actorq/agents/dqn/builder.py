"""DQN builder: what a launcher needs to assemble DQN nodes, without knowing DQN."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import dm_env
import numpy as np

from actorq.agents.dqn import acting
from actorq.agents.dqn.config import DQNConfig
from actorq.agents.transitions import transition_signature
from actorq.core import Exploration
from actorq.replay.specs import ArraySpec

if TYPE_CHECKING:  # the learner and the Flax networks are imported when first needed, so
    # actor processes (exploration, replay signature, sizes) never import JAX.
    from actorq.agents.dqn.learning import DQNLearner
    from actorq.networks.mlp import MLP


class DQNBuilder:
    """Builds DQN's learner, exploration and replay signature for one environment."""

    name = "dqn"

    def __init__(self, config: DQNConfig, environment_spec: Mapping[str, Any]) -> None:
        obs_spec, act_spec = environment_spec["observation"], environment_spec["action"]
        if not isinstance(act_spec, dm_env.specs.DiscreteArray):
            raise ValueError("DQN needs a discrete-action task (a Gym task); use D4PG for DMC")
        self.config = config
        self.observation_size = int(np.prod(obs_spec.shape))
        self.num_actions = int(act_spec.num_values)

    @property
    def uses_priorities(self) -> bool:
        return self.config.prioritized

    @functools.cached_property
    def networks(self) -> Any:
        """The Flax networks (imports JAX/Flax on first access)."""
        from actorq.agents.dqn.networks import make_networks

        return make_networks(self.config, self.observation_size, self.num_actions)

    @property
    def policy_output_size(self) -> int:
        """Outputs of the network the actors run (no Flax needed)."""
        return self.num_actions

    @property
    def policy_network(self) -> MLP:
        return self.networks.q_network

    @property
    def n_step(self) -> int:
        return self.config.n_step

    @property
    def discount(self) -> float:
        return self.config.discount

    def replay_signature(self) -> dict[str, ArraySpec]:
        return transition_signature(self.observation_size, ArraySpec((), np.dtype(np.int32)))

    def make_learner(
        self,
        batches: Iterator[dict[str, np.ndarray]],
        seed: int,
        update_priorities: Callable[[np.ndarray, np.ndarray], None] | None = None,
        replay_size: Callable[[], int] | None = None,
    ) -> DQNLearner:
        from actorq.agents.dqn.learning import DQNLearner

        return DQNLearner(
            self.networks, self.config, batches, seed, update_priorities, replay_size
        )

    def make_exploration(self, actor_index: int, num_actors: int, seed: int) -> Exploration:
        final = acting.actor_epsilon(
            self.config.epsilon_min, self.config.epsilon_max, actor_index, num_actors
        )
        return acting.epsilon_greedy(
            self.config.epsilon_start, final, self.config.epsilon_decay_steps, seed
        )

    def evaluation_action(self, outputs: np.ndarray) -> np.ndarray:
        return acting.greedy_action(outputs)
