"""D4PG builder: everything a launcher needs to assemble D4PG nodes, without knowing D4PG."""

from __future__ import annotations

import numpy as np

from actorq.agents.builder import AgentBuilder
from actorq.agents.d4pg.acting import actor_sigma, gaussian_exploration, greedy_action
from actorq.core import Exploration


class D4PGBuilder(AgentBuilder):
    """D4PG's learner, Gaussian exploration and replay for one continuous-action task."""

    name = "d4pg"
    action_kind = "continuous"
    networks_factory = "actorq.agents.d4pg.networks:make_networks"
    learner_factory = "actorq.agents.d4pg.learning:D4PGLearner"

    def make_exploration(self, actor_index: int, num_actors: int, seed: int) -> Exploration:
        sigma = actor_sigma(self.config.sigma_max, actor_index, num_actors)
        return gaussian_exploration(sigma, seed)

    def evaluation_action(self, outputs: np.ndarray) -> np.ndarray:
        return greedy_action(outputs)
