"""SAC builder: everything a launcher needs to assemble SAC nodes, without knowing SAC."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import dm_env
import numpy as np

from actorq.agents.sac import acting
from actorq.agents.sac.config import SACConfig
from actorq.agents.transitions import transition_signature
from actorq.core import Exploration
from actorq.replay.specs import ArraySpec

if TYPE_CHECKING:  # the learner and the Flax networks are imported when first needed, so
    # actor processes (exploration, replay signature, sizes) never import JAX.
    from actorq.agents.sac.learning import SACLearner
    from actorq.networks.mlp import MLP


class SACBuilder:
    """Builds SAC's learner, exploration and replay signature for one environment."""

    name = "sac"
    uses_priorities = False

    def __init__(self, config: SACConfig, environment_spec: Mapping[str, Any]) -> None:
        obs_spec, act_spec = environment_spec["observation"], environment_spec["action"]
        if isinstance(act_spec, dm_env.specs.DiscreteArray):
            raise ValueError("SAC needs a continuous-action task (a DMC task); use DQN for Gym")
        self.config = config
        self.observation_size = int(np.prod(obs_spec.shape))
        self.action_size = int(np.prod(act_spec.shape))

    @functools.cached_property
    def networks(self) -> Any:
        """The Flax networks (imports JAX/Flax on first access)."""
        from actorq.agents.sac.networks import make_networks

        return make_networks(self.config, self.observation_size, self.action_size)

    @property
    def policy_output_size(self) -> int:
        """Outputs of the network the actors run, ``[mean | log_std]`` (no Flax needed)."""
        return 2 * self.action_size

    @property
    def policy_network(self) -> MLP:
        """The network the actors run (and the quantizer packages)."""
        return self.networks.policy

    @property
    def n_step(self) -> int:
        return self.config.n_step

    @property
    def discount(self) -> float:
        return self.config.discount

    def replay_signature(self) -> dict[str, ArraySpec]:
        """Replay items: n-step transitions with float32 actions in [-1, 1]."""
        action = ArraySpec((self.action_size,), np.dtype(np.float32))
        return transition_signature(self.observation_size, action)

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
