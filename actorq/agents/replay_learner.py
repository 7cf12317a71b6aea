"""What the learners of n-step transitions share (D4PG, DDPG, SAC): the Learner protocol's step,
state and restore around an agent's own jitted update."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np

from actorq.agents.transitions import LEARNER_FIELDS, sample_policy_lag
from actorq.quantization.qat import QATSchedule


class ReplayLearner:
    """Base of a learner whose update takes ``[sgd_steps_per_call, batch, ...]`` transitions.

    Subclasses set, in ``__init__``: ``_batches`` (the replay batches), ``_qat`` (the QAT
    schedule), ``_update_plain`` and ``_update_qat`` (the jitted ``(state, batch) -> (state,
    metrics)`` without and with fake quantization; ``_update_qat`` None without QAT),
    ``_state`` (a NamedTuple of class ``state_type`` whose ``steps`` field counts SGD steps) and
    ``_steps``.
    """

    state_type: ClassVar[type]
    _batches: Iterator[dict[str, np.ndarray]]
    _qat: QATSchedule
    _update_plain: Callable[[Any, dict[str, Any]], tuple[Any, dict[str, Any]]]
    _update_qat: Callable[[Any, dict[str, Any]], tuple[Any, dict[str, Any]]] | None
    _state: Any
    _steps: int

    @property
    def steps(self) -> int:
        return self._steps

    def step(self) -> dict[str, float]:
        """One jitted update on the next batch; returns its metrics (floats), whether QAT was on
        and the sampled experience's policy lag."""
        import jax

        raw = next(self._batches)
        batch = {k: raw[k] for k in LEARNER_FIELDS}
        if np.ndim(batch["reward"]) != 2:
            raise ValueError("a learner batch is [sgd_steps_per_call, batch_size] transitions; "
                             f"got rewards of shape {np.shape(batch['reward'])}")
        qat_on = self._update_qat is not None and self._qat.active(self._steps)
        update = self._update_qat if qat_on else self._update_plain
        self._state, metrics = update(self._state, batch)
        self._steps += int(np.shape(batch["reward"])[0])
        out = {k: float(v) for k, v in jax.device_get(metrics).items()}
        out["qat_active"] = float(qat_on)
        return {**out, **sample_policy_lag(self._steps, raw)}

    def state(self) -> Any:
        """The full training state as a dict (checkpointed by the launchers)."""
        return self._state._asdict()

    def restore(self, state: Any) -> None:
        """Continues from a :meth:`state` (e.g. restored from a checkpoint)."""
        self._state = self.state_type(**state)
        self._steps = int(np.asarray(self._state.steps))
