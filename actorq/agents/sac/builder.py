"""SAC builder: everything a launcher needs to assemble SAC nodes, without knowing SAC."""

from __future__ import annotations

import numpy as np

from actorq.agents.builder import AgentBuilder
from actorq.agents.sac.acting import deterministic_action, tanh_gaussian_exploration
from actorq.core import Exploration


class SACBuilder(AgentBuilder):
    """SAC's learner, tanh-Gaussian exploration and replay for one continuous-action task."""

    name = "sac"
    action_kind = "continuous"
    networks_factory = "actorq.agents.sac.networks:make_networks"
    learner_factory = "actorq.agents.sac.learning:SACLearner"

    @property
    def policy_output_size(self) -> int:
        """Outputs of the network the actors run, ``[mean | log_std]`` (no Flax needed)."""
        return 2 * self.action_size

    def make_exploration(self, actor_index: int, num_actors: int, seed: int) -> Exploration:
        """Samples the stochastic policy; every actor explores the same way (own noise seed)."""
        del actor_index, num_actors
        return tanh_gaussian_exploration(
            self.config.log_std_min, self.config.log_std_max, seed
        )

    def evaluation_action(self, outputs: np.ndarray) -> np.ndarray:
        """The noise-free action ``tanh(mean)``."""
        return deterministic_action(outputs)
