"""DDPG builder: everything a launcher needs to assemble DDPG nodes, without knowing DDPG."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from actorq.agents.builder import AgentBuilder
from actorq.agents.ddpg.acting import ddpg_exploration
from actorq.core import Exploration

if TYPE_CHECKING:  # imported when first needed: actor processes never import JAX
    from actorq.agents.ddpg.learning import DDPGLearner


class DDPGBuilder(AgentBuilder):
    """DDPG's learner, exploration and replay for one continuous-action task."""

    name = "ddpg"
    action_kind = "continuous"

    def _make_networks(self) -> Any:
        from actorq.agents.ddpg.networks import make_networks

        return make_networks(self.config, self.observation_size, self.action_size)

    def make_learner(
        self,
        batches: Iterator[dict[str, np.ndarray]],
        seed: int,
        update_priorities: Callable[[np.ndarray, np.ndarray], None] | None = None,
        replay_size: Callable[[], int] | None = None,
    ) -> DDPGLearner:
        from actorq.agents.ddpg.learning import DDPGLearner

        del update_priorities, replay_size  # uniform replay
        return DDPGLearner(self.networks, self.config, batches, seed)

    def make_exploration(self, actor_index: int, num_actors: int, seed: int) -> Exploration:
        del actor_index, num_actors  # every actor explores alike (own noise seed)
        c = self.config
        return ddpg_exploration(c.exploration, c.sigma, c.ou_theta, c.ou_dt,
                                c.uniform_random_steps, seed)

    def evaluation_action(self, outputs: np.ndarray) -> np.ndarray:
        return np.asarray(outputs, np.float32)
