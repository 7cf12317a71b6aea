"""What every agent builder shares: environment specs, networks on demand, the data path.

A builder tells a launcher everything it needs to assemble an agent's nodes without knowing the
agent (the :class:`actorq.core.Builder` protocol): which data path its experience takes
(``replay``: n-step transitions in a replay table; ``queue``: fixed-length unrolls in a FIFO
queue, each taken once), the adders that write it, the table's item signature, how the learner
reads batches, the learner itself, the actors' exploration and the policy head the package
carries. Building one, its adders, exploration and signature never imports JAX: actor processes
on the ONNX Runtime runtimes stay small.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

import dm_env
import numpy as np

from actorq.agents.transitions import learner_batches, transition_signature
from actorq.core import Adder, DataPath, Exploration, Learner
from actorq.envs.base import STACKED_FRAMES
from actorq.lazy_exports import import_attribute
from actorq.networks.sizes import check_torso_fits
from actorq.replay.adders import NStepTransitionAdder
from actorq.replay.specs import ArraySpec
from actorq.replay.table import Table


class AgentBuilder:
    """The shared part of the builders; subclasses set ``name``, ``action_kind``,
    ``networks_factory`` and ``learner_factory`` and implement :meth:`make_exploration` and
    :meth:`evaluation_action`.

    ``action_kind``: ``"discrete"``, ``"continuous"`` or ``"any"``: which tasks the agent takes.
    """

    name: ClassVar[str]
    action_kind: ClassVar[str]
    data_path: ClassVar[DataPath] = "replay"
    uses_priorities: bool = False
    # "module:attribute" of the agent's network and learner factories, imported on first use
    # (actor processes never import JAX): networks(config, observation_size, action_size) and
    # learner(networks, config, batches, seed).
    networks_factory: ClassVar[str]
    learner_factory: ClassVar[str]
    # Whether the networks factory takes pixel observations (``observation_shape=(H, W, C)``,
    # a conv torso chosen by ``config.torso``).
    pixel_observations: ClassVar[bool] = False
    # Whether the policy's outputs are action values whose argmax is the action (DQN). Their
    # gaps are small beside their size, so the int8 recipe keeps such an output layer fp32
    # (``make_policy_quantizer``; docs/ptq.md).
    action_value_head: ClassVar[bool] = False

    def __init__(self, config: Any, environment_spec: Mapping[str, Any]) -> None:
        obs_spec, act_spec = environment_spec["observation"], environment_spec["action"]
        self.discrete = isinstance(act_spec, dm_env.specs.DiscreteArray)
        wanted = {"discrete": True, "continuous": False}.get(self.action_kind)
        if wanted is not None and wanted != self.discrete:
            kind = "discrete" if wanted else "continuous"
            raise ValueError(f"{self.name.upper()} needs a {kind}-action task; this task's "
                             f"actions are {'discrete' if self.discrete else 'continuous'}")
        self.config = config
        self.observation_size = int(np.prod(obs_spec.shape))
        # Integer-coded [H, W, C] observations (uint8 frames) stay uint8 end to end.
        self.pixels = np.dtype(obs_spec.dtype).kind in "iu" and len(obs_spec.shape) == 3
        if self.pixels and not self.pixel_observations:
            raise ValueError(f"{self.name.upper()} takes flat observations; this task's are "
                             f"{np.dtype(obs_spec.dtype).name} images of shape "
                             f"{tuple(obs_spec.shape)}")
        self.observation_shape = tuple(int(v) for v in obs_spec.shape)
        self.stacked_frames = getattr(obs_spec, "name", None) == STACKED_FRAMES
        if self.pixel_observations:  # before anything runs: the torso must read these
            check_torso_fits(config.torso, self.observation_shape if self.pixels else None)
        # What one integer code of a pixel observation is worth: 1 / the spec's maximum (1/255
        # for frames, 1 for MinAtar's 0/1 channels; 1/255 when the spec has no maximum).
        maximum = np.max(getattr(obs_spec, "maximum", 255)) if self.pixels else 1
        self.observation_scale = 1.0 / float(maximum) if maximum > 0 else 1.0
        # Number of discrete actions, or the dimension of a continuous action.
        self.action_size = (int(act_spec.num_values) if self.discrete
                            else int(np.prod(act_spec.shape)))

    # ------------------------------------------------------------------ networks (JAX)

    @functools.cached_property
    def networks(self) -> Any:
        """The Flax networks (imports JAX/Flax on first access)."""
        return self._make_networks()

    def _make_networks(self) -> Any:
        make = import_attribute(*self.networks_factory.split(":"))
        return make(self.config, self.observation_size, self.action_size,
                    **self.observation_options())

    def observation_options(self) -> dict[str, Any]:
        """Keyword arguments about pixel observations for the networks factory (their shape and
        the worth of one code); none for flat observations."""
        if not self.pixels:
            return {}
        return {"observation_shape": self.observation_shape,
                "observation_scale": self.observation_scale}

    @property
    def policy_network(self) -> Any:
        """The network the actors run (and the quantizers package)."""
        return self.networks.policy

    @property
    def policy_output_size(self) -> int:
        """Outputs of the network the actors run (no Flax needed)."""
        return self.action_size

    @property
    def head_noise_period(self) -> int | None:
        """Actor steps a stochastic head holds its noise for: None, fresh noise every step."""
        return None

    # ---------------------------------------------------------------------- data path

    @property
    def action_spec(self) -> ArraySpec:
        """One action as the tables store it."""
        if self.discrete:
            return ArraySpec((), np.dtype(np.int32))
        return ArraySpec((self.action_size,), np.dtype(np.float32))

    @property
    def observation_spec(self) -> ArraySpec:
        """One observation as the tables store it: float32 features, or uint8 frames."""
        if self.pixels:
            return ArraySpec(self.observation_shape, np.dtype(np.uint8))
        return ArraySpec((self.observation_size,), np.dtype(np.float32))

    @property
    def n_step(self) -> int:
        return self.config.n_step

    @property
    def discount(self) -> float:
        return self.config.discount

    @property
    def batch_items(self) -> int:
        """Table items one learner call reads."""
        return int(self.config.batch_size) * int(self.config.sgd_steps_per_call)

    @property
    def steps_per_item(self) -> int:
        """Env steps per table item (1 for transitions, T for unrolls)."""
        return 1

    @property
    def adder_lag(self) -> int:
        """Env steps an adder may hold before its first item (what an actor holds back)."""
        return self.n_step + 1

    def replay_signature(self) -> dict[str, ArraySpec]:
        """Field -> ``ArraySpec`` of one table item."""
        return transition_signature(self.observation_spec, self.action_spec)

    @property
    def frame_stack_fields(self) -> tuple[str, ...]:
        """Replay fields whose frames the table stores once: a transition's observation and
        next observation, when the task stacks frames (Atari). Queue items (unrolls) are
        consumed once and keep their stacks."""
        if self.stacked_frames and self.data_path == "replay":
            return ("observation", "next_observation")
        return ()

    def make_adder(self, emit: Callable[[dict[str, np.ndarray]], None]) -> Adder:
        """One environment's adder, writing items through ``emit``."""
        return NStepTransitionAdder(emit, self.n_step, self.discount)

    def learner_batches(self, table: Table,
                        timeout: float | None = None) -> Iterator[dict[str, np.ndarray]]:
        """The batches the learner reads from ``table``."""
        return learner_batches(table, self.config.batch_size, self.config.sgd_steps_per_call,
                               timeout=timeout, with_sample_info=self.uses_priorities)

    # ------------------------------------------------------------------ the agent proper

    def make_learner(
        self,
        batches: Iterator[dict[str, np.ndarray]],
        seed: int,
        update_priorities: Callable[[np.ndarray, np.ndarray], None] | None = None,
        replay_size: Callable[[], int] | None = None,
    ) -> Learner:
        """The learner, reading the batches of :meth:`learner_batches`."""
        make = import_attribute(*self.learner_factory.split(":"))
        return make(self.networks, self.config, batches, seed,
                    **self.learner_options(update_priorities, replay_size))

    def learner_options(
        self,
        update_priorities: Callable[[np.ndarray, np.ndarray], None] | None,
        replay_size: Callable[[], int] | None,
    ) -> dict[str, Any]:
        """Extra keyword arguments of the learner factory (a prioritized learner's hooks into
        the table); none by default."""
        del update_priorities, replay_size
        return {}

    def make_exploration(self, actor_index: int, num_actors: int,
                         seed: int) -> Exploration | None:
        """Actor ``i`` of ``N``'s exploration (its noise level is spread across actors); None
        when the package's stochastic head samples the actions."""
        raise NotImplementedError

    def evaluation_action(self, outputs: np.ndarray) -> np.ndarray:
        """The noise-free action for network outputs ``[batch, k]``."""
        raise NotImplementedError

    def policy_extras(self, learner: Learner) -> dict[str, Any]:
        """What the package carries besides the MLP (``PolicyPackage`` fields: the head, its
        log-std, the observation normalizer). Deterministic agents: nothing."""
        del learner
        return {}
