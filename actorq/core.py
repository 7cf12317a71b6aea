"""The small interfaces that connect the pieces (Acme's roles, without Acme).

Data flows one way: env -> Actor (quantized policy) -> adder -> replay -> Learner ->
quantizer -> VariableSource -> Actor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import dm_env
import numpy as np

# (network outputs [batch, k], actor step) -> actions [batch, ...]
Exploration = Callable[[np.ndarray, int], np.ndarray]


class Actor(Protocol):
    """Acts in an environment with a (quantized) policy and feeds experience to replay."""

    def select_action(self, observation: np.ndarray) -> np.ndarray:
        """Returns the action for one observation (exploration included)."""
        ...

    def select_actions(self, observations: np.ndarray) -> np.ndarray:
        """Returns actions ``[k, ...]`` for observations ``[k, ...]`` of k environments."""
        ...

    def observe_first(self, timestep: dm_env.TimeStep, env_index: int = 0) -> None:
        """Records the first timestep of an episode of environment ``env_index``."""
        ...

    def observe(self, action: np.ndarray, next_timestep: dm_env.TimeStep,
                env_index: int = 0) -> None:
        """Records an action and the timestep it produced in environment ``env_index``."""
        ...

    def update(self, wait: bool = False, steps: int = 1) -> None:
        """Counts ``steps`` environment steps; pulls a newer policy if one is due (``wait``
        forces a pull now)."""
        ...


class VariableSource(Protocol):
    """Serves the latest published policy package."""

    def latest(self) -> tuple[int, bytes] | None:
        """``(version, package bytes)`` of the newest policy, or None before the first."""
        ...


class Learner(Protocol):
    """Trains in full precision from replay."""

    @property
    def steps(self) -> int:
        """SGD steps taken so far."""
        ...

    def step(self) -> dict[str, float]:
        """One update call (``sgd_steps_per_call`` SGD steps); returns scalar metrics."""
        ...

    def policy_params(self) -> Any:
        """The current full-precision params of the policy network the actors run."""
        ...

    def state(self) -> Any:
        """The whole learner state as a pytree (for checkpoints)."""
        ...

    def restore(self, state: Any) -> None:
        """Replaces the learner state with a pytree returned by :meth:`state`."""
        ...


class Builder(Protocol):
    """Everything a launcher needs to assemble an agent's nodes, without knowing the agent
    (Acme's builder role). Building one, its exploration and its replay signature never imports
    JAX: actor processes on the ONNX Runtime runtimes stay small."""

    name: str
    uses_priorities: bool
    config: Any

    @property
    def observation_size(self) -> int: ...

    @property
    def policy_output_size(self) -> int:
        """Outputs of the network the actors run (no JAX needed)."""
        ...

    @property
    def policy_network(self) -> Any:
        """The Flax network the actors run and the quantizers package."""
        ...

    @property
    def n_step(self) -> int: ...

    @property
    def discount(self) -> float: ...

    def replay_signature(self) -> dict[str, Any]:
        """Field -> ``ArraySpec`` of one replay item."""
        ...

    def make_learner(
        self,
        batches: Iterator[dict[str, np.ndarray]],
        seed: int,
        update_priorities: Callable[[np.ndarray, np.ndarray], None] | None = None,
        replay_size: Callable[[], int] | None = None,
    ) -> Learner:
        """The learner, reading ``[sgd_steps_per_call, batch, ...]`` batches."""
        ...

    def make_exploration(self, actor_index: int, num_actors: int, seed: int) -> Exploration:
        """Actor ``i`` of ``N``'s exploration (its noise level is spread across actors)."""
        ...

    def evaluation_action(self, outputs: np.ndarray) -> np.ndarray:
        """The noise-free action for network outputs ``[batch, k]``."""
        ...
