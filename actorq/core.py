"""The small interfaces that connect the pieces (Acme's roles, without Acme).

Data flows one way: env -> Actor (quantized policy) -> adder -> replay -> Learner ->
quantizer -> VariableSource -> Actor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Literal, Protocol

import dm_env
import numpy as np

# (network outputs [batch, k], actor step) -> actions [batch, ...]
Exploration = Callable[[np.ndarray, int], np.ndarray]
# replay: n-step transitions in a replay table (off-policy); queue: fixed-length unrolls in a
# FIFO queue, each taken once (on-policy).
DataPath = Literal["replay", "queue"]


class Adder(Protocol):
    """Turns one environment's step stream into table items (n-step transitions, unrolls)."""

    def add_first(self, timestep: dm_env.TimeStep) -> None: ...

    def add(self, action: Any, next_timestep: dm_env.TimeStep,
            extras: dict[str, Any] | None = None) -> None: ...

    def reset(self) -> None: ...


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
        """Counts ``steps`` environment steps; a pull that falls due is taken by the next
        action, so that a learner interleaved with the actor can publish first (``wait``
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
    (Acme's builder role; ``actorq.agents.builder.AgentBuilder`` holds what the agents share).
    Building one, its adders, exploration and table signature never imports JAX: actor
    processes on the ONNX Runtime runtimes stay small."""

    name: str
    data_path: DataPath
    uses_priorities: bool
    config: Any
    observation_size: int
    # The policy's outputs are action values and the action is their argmax (DQN).
    action_value_head: bool

    @property
    def policy_output_size(self) -> int:
        """Outputs of the network the actors run (no JAX needed)."""
        ...

    @property
    def policy_network(self) -> Any:
        """The Flax network the actors run and the quantizers package."""
        ...

    @property
    def head_noise_period(self) -> int | None:
        """Actor steps a stochastic head holds its noise for (gSDE); None: fresh every step."""
        ...

    @property
    def n_step(self) -> int: ...

    @property
    def discount(self) -> float: ...

    @property
    def batch_items(self) -> int:
        """Table items one learner call reads."""
        ...

    @property
    def steps_per_item(self) -> int:
        """Env steps per table item."""
        ...

    @property
    def adder_lag(self) -> int:
        """Env steps an adder may hold before it emits."""
        ...

    def replay_signature(self) -> dict[str, Any]:
        """Field -> ``ArraySpec`` of one table item."""
        ...

    @property
    def frame_stack_fields(self) -> tuple[str, ...]:
        """Table fields whose stacked frames are stored once (``Table(frame_stacks=...)``)."""
        ...

    def make_adder(self, emit: Callable[[dict[str, np.ndarray]], None]) -> Adder:
        """One environment's adder."""
        ...

    def learner_batches(self, table: Any,
                        timeout: float | None = None) -> Iterator[dict[str, np.ndarray]]:
        """The batches the learner reads from ``table``."""
        ...

    def make_learner(
        self,
        batches: Iterator[dict[str, np.ndarray]],
        seed: int,
        update_priorities: Callable[[np.ndarray, np.ndarray], None] | None = None,
        replay_size: Callable[[], int] | None = None,
    ) -> Learner:
        """The learner, reading the batches of :meth:`learner_batches`."""
        ...

    def make_exploration(self, actor_index: int, num_actors: int,
                         seed: int) -> Exploration | None:
        """Actor ``i`` of ``N``'s exploration; None when the package's head samples."""
        ...

    def evaluation_action(self, outputs: np.ndarray) -> np.ndarray:
        """The noise-free action for network outputs ``[batch, k]``."""
        ...

    def policy_extras(self, learner: Learner) -> dict[str, Any]:
        """``PolicyPackage`` fields besides the MLP (head, log-std, normalizer)."""
        ...
