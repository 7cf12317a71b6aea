"""SAC builder: everything a launcher needs to assemble SAC nodes, without knowing SAC."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from actorq.agents.builder import AgentBuilder
from actorq.agents.sac import acting
from actorq.core import Exploration

if TYPE_CHECKING:  # imported when first needed: actor processes never import JAX
    from actorq.agents.sac.learning import SACLearner


class SACBuilder(AgentBuilder):
    """SAC's learner, tanh-Gaussian exploration and replay for one continuous-action task."""

    name = "sac"
    action_kind = "continuous"

    def _make_networks(self) -> Any:
        from actorq.agents.sac.networks import make_networks

        return make_networks(self.config, self.observation_size, self.action_size)

    @property
    def policy_output_size(self) -> int:
        """Outputs of the network the actors run, ``[mean | log_std]`` (no Flax needed)."""
        return 2 * self.action_size

    def make_learner(
        self,
        batches: Iterator[dict[str, np.ndarray]],
        seed: int,
        update_priorities: Callable[[np.ndarray, np.ndarray], None] | None = None,
        replay_size: Callable[[], int] | None = None,
    ) -> SACLearner:
        """The SAC learner reading ``batches`` (uniform replay: priorities are not used)."""
        from actorq.agents.sac.learning import SACLearner

        del update_priorities, replay_size
        return SACLearner(self.networks, self.config, batches, seed)

    def make_exploration(self, actor_index: int, num_actors: int, seed: int) -> Exploration:
        """Samples the stochastic policy; every actor explores the same way (own noise seed)."""
        del actor_index, num_actors
        return acting.tanh_gaussian_exploration(
            self.config.log_std_min, self.config.log_std_max, seed
        )

    def evaluation_action(self, outputs: np.ndarray) -> np.ndarray:
        """The noise-free action ``tanh(mean)``."""
        return acting.deterministic_action(outputs)
