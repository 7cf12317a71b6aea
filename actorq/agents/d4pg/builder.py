"""D4PG builder: everything a launcher needs to assemble D4PG nodes, without knowing D4PG."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from actorq.agents.builder import AgentBuilder
from actorq.agents.d4pg import acting
from actorq.core import Exploration

if TYPE_CHECKING:  # imported when first needed: actor processes never import JAX
    from actorq.agents.d4pg.learning import D4PGLearner


class D4PGBuilder(AgentBuilder):
    """D4PG's learner, Gaussian exploration and replay for one continuous-action task."""

    name = "d4pg"
    action_kind = "continuous"

    def _make_networks(self) -> Any:
        from actorq.agents.d4pg.networks import make_networks

        return make_networks(self.config, self.observation_size, self.action_size)

    def make_learner(
        self,
        batches: Iterator[dict[str, np.ndarray]],
        seed: int,
        update_priorities: Callable[[np.ndarray, np.ndarray], None] | None = None,
        replay_size: Callable[[], int] | None = None,
    ) -> D4PGLearner:
        from actorq.agents.d4pg.learning import D4PGLearner

        del update_priorities, replay_size  # D4PG samples uniformly (the paper's setup)
        return D4PGLearner(self.networks, self.config, batches, seed)

    def make_exploration(self, actor_index: int, num_actors: int, seed: int) -> Exploration:
        sigma = acting.actor_sigma(self.config.sigma_max, actor_index, num_actors)
        return acting.gaussian_exploration(sigma, seed)

    def evaluation_action(self, outputs: np.ndarray) -> np.ndarray:
        return acting.greedy_action(outputs)
