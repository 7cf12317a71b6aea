"""Load the fp32 policy of a finished (or checkpointed) run back from its run directory.

The run directory's ``config.json`` rebuilds the agent builder (same networks, same task) and a
throw-away learner whose state is the template Orbax restores the newest checkpoint into; the
learner then hands out its full-precision policy parameters. Nothing is trained or sampled.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import jax
import ml_collections
import numpy as np

from actorq.checkpointing import Checkpointer
from actorq.core import Builder
from actorq.envs import is_discrete
from actorq.networks.mlp import MLP
from actorq.quantization import make_policy_quantizer
from actorq.quantization.package import PolicyPackage, first_layer_inputs

CONFIG_FILE = "config.json"
CHECKPOINT_DIR = "checkpoints"


@dataclasses.dataclass(frozen=True, eq=False)
class TrainedPolicy:
    """A run's restored policy.

    Attributes:
      run_dir: the run directory it came from.
      config: the run's resolved experiment config (from ``config.json``).
      builder: the agent builder rebuilt from that config (``evaluation_action`` etc.).
      params: the fp32 policy parameters (numpy pytree) of the restored checkpoint.
      network: the policy network those parameters belong to.
      checkpoint_step: the checkpoint's step (actor steps at save time).
      learner_steps: learner steps (versions) the restored policy was trained for.
      extras: what its packages carry besides the layers (the stochastic head, its log-std,
        the observation normalizer: ``PolicyPackage`` fields); empty for deterministic agents.
    """

    run_dir: Path
    config: ml_collections.ConfigDict
    builder: Builder
    params: Any
    network: MLP
    checkpoint_step: int
    learner_steps: int
    extras: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def agent(self) -> str:
        """The agent name (``dqn``, ``d4pg``)."""
        return str(self.config.agent)

    @property
    def task(self) -> str:
        """The task name (e.g. ``cartpole``)."""
        return str(self.config.task)

    @property
    def discrete(self) -> bool:
        """Whether the policy picks discrete actions (its outputs are Q-values)."""
        return is_discrete(self.task)

    def package(self, quantizer: str, calibration: np.ndarray | None = None) -> PolicyPackage:
        """The policy quantized by ``quantizer`` (a registry spec such as ``int8``).

        ``calibration``: raw observations for quantizers that take them (``with_calibration``,
        e.g. GPTQ and the int8 recipe), normalized as the package will; others ignore it.
        """
        q = make_policy_quantizer(quantizer, self.builder.action_value_head)
        if calibration is not None and hasattr(q, "with_calibration"):
            q = q.with_calibration(first_layer_inputs(calibration, self.extras))
        package = q.quantize(self.params, self.network, self.learner_steps)
        return dataclasses.replace(package, **self.extras) if self.extras else package


def read_run_config(run_dir: str | Path) -> ml_collections.ConfigDict:
    """The ``config.json`` of ``run_dir`` as a ConfigDict; clear errors when it is not a run."""
    path = Path(run_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"run directory not found: {path}")
    config_path = path / CONFIG_FILE
    if not config_path.is_file():
        raise FileNotFoundError(
            f"{path} is not a run directory: it has no {CONFIG_FILE} (runs write one at start)"
        )
    try:
        data = json.loads(config_path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON in {config_path}: {e}") from e
    if not isinstance(data, dict) or "agent" not in data or "task" not in data:
        raise ValueError(f"{config_path} is not an experiment config (needs 'agent' and 'task')")
    return ml_collections.ConfigDict(data)


def load_trained_policy(run_dir: str | Path, step: int | None = None) -> TrainedPolicy:
    """Restores the fp32 policy of the run in ``run_dir`` from its newest (or ``step``) checkpoint.

    Raises:
      FileNotFoundError: no such directory, no ``config.json``, or no checkpoint saved yet.
      ValueError: a malformed ``config.json`` or an unknown agent/task in it.
    """
    from actorq.agents.registry import builder_for_config

    path = Path(run_dir)
    config = read_run_config(path)
    checkpoints = path / CHECKPOINT_DIR
    # Checkpointer creates its directory; check first so loading never writes into a run dir.
    if not checkpoints.is_dir():
        raise FileNotFoundError(
            f"no checkpoint in {path}: {checkpoints} does not exist (runs save one every "
            "checkpoint_every_steps and when they stop)"
        )
    builder = builder_for_config(config)
    # The learner only provides the state template; its batch iterator is never touched.
    learner = builder.make_learner(iter(()), int(config.seed))
    checkpointer = Checkpointer(checkpoints)
    try:
        latest = checkpointer.latest_step()
        if latest is None:
            raise FileNotFoundError(
                f"no checkpoint in {checkpoints}: the run has not saved one yet"
            )
        chosen = latest if step is None else int(step)
        state, _ = checkpointer.restore(learner.state(), table=None, step=chosen)
    finally:
        checkpointer.close()
    learner.restore(state)
    params = jax.tree_util.tree_map(np.asarray, learner.policy_params())
    return TrainedPolicy(
        run_dir=path,
        config=config,
        builder=builder,
        params=params,
        network=builder.policy_network,
        checkpoint_step=int(chosen),
        learner_steps=int(learner.steps),
        extras=builder.policy_extras(learner),
    )
