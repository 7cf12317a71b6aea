"""DDPG builder: everything a launcher needs to assemble DDPG nodes, without knowing DDPG."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from actorq.agents.builder import AgentBuilder
from actorq.agents.ddpg.acting import RewardFloorAdder, ddpg_exploration
from actorq.core import Adder, Exploration


class DDPGBuilder(AgentBuilder):
    """DDPG's learner, exploration and replay for one continuous-action task."""

    name = "ddpg"
    action_kind = "continuous"
    networks_factory = "actorq.agents.ddpg.networks:make_networks"
    learner_factory = "actorq.agents.ddpg.learning:DDPGLearner"

    def make_exploration(self, actor_index: int, num_actors: int, seed: int) -> Exploration:
        del actor_index, num_actors  # every actor explores alike (own noise seed)
        c = self.config
        return ddpg_exploration(c.exploration, c.sigma, c.ou_theta, c.ou_dt,
                                c.uniform_random_steps, seed)

    def make_adder(self, emit: Callable[[dict[str, np.ndarray]], None]) -> Adder:
        adder = super().make_adder(emit)
        if self.config.reward_floor is not None:
            return RewardFloorAdder(adder, self.config.reward_floor)
        return adder

    def evaluation_action(self, outputs: np.ndarray) -> np.ndarray:
        return np.asarray(outputs, np.float32)
