"""The on-policy builders' shared part: the queue data path, unroll adders, stochastic heads."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from actorq.agents.builder import AgentBuilder
from actorq.agents.on_policy.acting import RewardScalingAdder
from actorq.agents.on_policy.unrolls import unroll_batches, unroll_signature
from actorq.core import Adder, Learner
from actorq.lazy_exports import import_attribute
from actorq.replay.adders import UnrollAdder
from actorq.replay.specs import ArraySpec
from actorq.replay.table import Table


class OnPolicyBuilder(AgentBuilder):
    """Unrolls into a queue; actors sample from the package's categorical (discrete tasks) or
    Gaussian (continuous tasks) head and record the behaviour log-probability."""

    action_kind = "any"
    data_path = "queue"
    networks_factory = "actorq.agents.on_policy.networks:make_networks"
    pixel_observations = True

    @property
    def n_step(self) -> int:
        return self.config.unroll_length

    @property
    def batch_items(self) -> int:
        return int(self.config.unrolls_per_batch)

    @property
    def steps_per_item(self) -> int:
        return int(self.config.unroll_length)

    @property
    def adder_lag(self) -> int:
        return int(self.config.unroll_length) + 1

    def replay_signature(self) -> dict[str, ArraySpec]:
        return unroll_signature(self.observation_spec, self.action_spec,
                                self.config.unroll_length)

    def make_adder(self, emit: Callable[[dict[str, np.ndarray]], None]) -> Adder:
        adder = UnrollAdder(emit, self.config.unroll_length)
        if self.config.normalize_rewards:
            return RewardScalingAdder(adder, self.config.discount)
        return adder

    def learner_batches(self, table: Table,
                        timeout: float | None = None) -> Iterator[dict[str, np.ndarray]]:
        return unroll_batches(table, self.config.unrolls_per_batch, timeout=timeout)

    def _make_networks(self) -> Any:
        make = import_attribute(*self.networks_factory.split(":"))
        return make(self.config, self.observation_size, self.action_size, self.discrete,
                    **self.observation_options())

    @property
    def gsde_features(self) -> int:
        """Features a gSDE policy appends to its outputs (0 without gSDE; no Flax needed)."""
        if self.discrete or not self.config.gsde:
            return 0
        return self.config.gsde_features(self.observation_size)

    @property
    def policy_network(self) -> Any:
        return self.networks.deployed_policy

    @property
    def policy_output_size(self) -> int:
        return self.action_size + self.gsde_features

    @property
    def head_noise_period(self) -> int | None:
        """A gSDE head holds each environment's noise for an unroll (SB3: one rollout)."""
        return int(self.config.unroll_length) if self.gsde_features else None

    def make_exploration(self, actor_index: int, num_actors: int, seed: int) -> None:
        """None: the package's head samples the actions (``actorq.runtime.policy_head``)."""
        del actor_index, num_actors, seed

    def evaluation_action(self, outputs: np.ndarray) -> np.ndarray:
        """The head's mode: the most likely action, or the Gaussian's mean."""
        if self.discrete:
            return np.argmax(outputs, axis=-1).astype(np.int32)
        return np.asarray(outputs[..., : self.action_size], np.float32)

    def policy_extras(self, learner: Learner) -> dict[str, Any]:
        return learner.policy_extras()
