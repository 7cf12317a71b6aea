"""Adders: turn a dm_env step stream into replay items."""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

import dm_env
import numpy as np

_BASE_KEYS = ("observation", "action", "reward", "discount", "next_observation")


@dataclasses.dataclass(frozen=True)
class _Step:
    observation: np.ndarray
    action: np.ndarray
    extras: dict[str, np.ndarray]
    reward: float
    discount: float
    next_observation: np.ndarray


def _observation(obs: Any) -> np.ndarray:
    if isinstance(obs, Mapping):
        raise TypeError(
            "NStepTransitionAdder needs array observations, got a mapping with keys "
            f"{sorted(obs)}; flatten them first (e.g. with an observation-concatenating wrapper)"
        )
    obs = np.asarray(obs)
    # Integer observations (uint8 frames) are stored as they come: 4x smaller than float32.
    return obs.copy() if obs.dtype.kind in "iu" else np.array(obs, dtype=np.float32)


def _scalar(value: Any, what: str) -> float:
    if value is None:
        raise ValueError(f"next_timestep.{what} is None; add() needs a MID or LAST timestep")
    arr = np.asarray(value)
    if arr.ndim != 0:
        raise ValueError(f"next_timestep.{what} must be a scalar, got shape {arr.shape}")
    return float(arr)


class NStepTransitionAdder:
    """Emits n-step transitions ``{observation, action, reward, discount, next_observation}``.

    For a transition starting at observation s_t and covering m <= n steps, with env rewards
    r_1..r_m and env discounts d_1..d_m taken from the timesteps returned after each action, and
    gamma = ``discount``::

        reward   = r_1 + gamma d_1 r_2 + gamma^2 d_1 d_2 r_3 + ...
                 = sum_{k=1}^{m} gamma^(k-1) (prod_{j<k} d_j) r_k
        discount = prod_{k=1}^{m} (gamma * d_k)
        next_observation = s_{t+m}

    so the learner's target is ``reward + discount * Q(next_observation)``. A full window
    (m = n) is emitted as soon as n steps are available; at the episode's LAST timestep every
    remaining (shorter) window is flushed, so each step of an episode starts exactly one
    transition. Termination (d = 0) makes the discount 0; truncation (LAST with d = 1) keeps
    bootstrapping. ``reward``/``discount`` are float32 scalars, observations float32, the action
    keeps its dtype and shape, and ``extras`` given with ``add`` (describing the step's start
    state/action, e.g. a policy version) are copied into the transition that starts there.
    """

    def __init__(
        self,
        emit: Callable[[dict[str, np.ndarray]], None],
        n_step: int,
        discount: float,
    ) -> None:
        if int(n_step) != n_step or n_step < 1:
            raise ValueError(f"n_step must be an int >= 1, got {n_step}")
        if not (math.isfinite(discount) and 0.0 <= discount <= 1.0):
            raise ValueError(f"discount must be in [0, 1], got {discount}")
        self._emit = emit
        self._n = int(n_step)
        self._gamma = float(discount)
        self._buffer: collections.deque[_Step] = collections.deque()
        self._observation: np.ndarray | None = None  # None: no episode in progress

    @property
    def n_step(self) -> int:
        """Maximum number of env steps per transition."""
        return self._n

    @property
    def discount(self) -> float:
        """The agent's discount gamma."""
        return self._gamma

    def reset(self) -> None:
        """Drops any partial episode without emitting it."""
        self._buffer.clear()
        self._observation = None

    def add_first(self, timestep: dm_env.TimeStep) -> None:
        """Starts an episode at a FIRST timestep."""
        if not timestep.first():
            raise ValueError(f"add_first() needs a FIRST timestep, got {timestep.step_type}")
        if self._observation is not None:
            raise ValueError(
                "add_first() called while an episode is in progress; call reset() to drop it"
            )
        self._observation = _observation(timestep.observation)

    def add(
        self,
        action: Any,
        next_timestep: dm_env.TimeStep,
        extras: Mapping[str, Any] | None = None,
    ) -> None:
        """Records ``action`` taken at the current observation and the timestep it led to."""
        if self._observation is None:
            raise ValueError("add() called before add_first(): start each episode with "
                             "add_first(timestep)")
        if next_timestep.first():
            raise ValueError("add() got a FIRST timestep; start a new episode with add_first()")
        extras_arrays = {k: np.array(v) for k, v in (extras or {}).items()}
        clash = sorted(set(extras_arrays) & set(_BASE_KEYS))
        if clash:
            raise ValueError(f"extras keys {clash} clash with transition keys {_BASE_KEYS}")
        next_obs = _observation(next_timestep.observation)
        self._buffer.append(
            _Step(
                observation=self._observation,
                action=np.array(action),
                extras=extras_arrays,
                reward=_scalar(next_timestep.reward, "reward"),
                discount=_scalar(next_timestep.discount, "discount"),
                next_observation=next_obs,
            )
        )
        self._observation = next_obs
        if next_timestep.last():
            while self._buffer:
                self._emit_oldest()
            self._observation = None  # the next episode must start with add_first()
        elif len(self._buffer) == self._n:
            self._emit_oldest()

    def _emit_oldest(self) -> None:
        # Accumulate in float64; cast once at the end.
        reward, discount = 0.0, 1.0
        for step in self._buffer:
            reward += discount * step.reward
            discount *= self._gamma * step.discount
        first = self._buffer.popleft()
        last = self._buffer[-1] if self._buffer else first
        # Copies: consecutive transitions share observation arrays internally.
        transition = {
            "observation": first.observation.copy(),
            "action": first.action,
            "reward": np.asarray(reward, dtype=np.float32),
            "discount": np.asarray(discount, dtype=np.float32),
            "next_observation": last.next_observation.copy(),
        }
        transition.update(first.extras)
        self._emit(transition)


class UnrollAdder:
    """Emits fixed-length unrolls of ``unroll_length`` consecutive steps of one environment, as
    on-policy learners (PPO, A2C; Acme's sequence adder, IMPALA's unrolls) consume them.

    One item holds, for steps t = 0..T-1 (arrays with a leading ``[T]`` axis): ``observation``
    (s_t), ``action`` (a_t), ``reward`` (r_{t+1}), ``discount`` (the env's d_{t+1}: 0 at a
    termination, 1 otherwise), ``last`` (1.0 where the episode ended at step t, by termination
    or truncation), ``next_observation`` (s_{t+1}: the final observation at an episode's end,
    so a truncated episode can bootstrap from it) and every ``extras`` field given with
    :meth:`add` (e.g. ``behaviour_logprob``, ``policy_version``). Unrolls run across episode
    boundaries: after a LAST step the next episode's :meth:`add_first` continues the same unroll.
    Only whole unrolls are emitted, so an actor that dies mid-unroll sends nothing partial.
    """

    def __init__(self, emit: Callable[[dict[str, np.ndarray]], None],
                 unroll_length: int) -> None:
        if int(unroll_length) != unroll_length or unroll_length < 1:
            raise ValueError(f"unroll_length must be an int >= 1, got {unroll_length}")
        self._emit = emit
        self._length = int(unroll_length)
        self._steps: list[dict[str, np.ndarray]] = []
        self._observation: np.ndarray | None = None

    @property
    def unroll_length(self) -> int:
        return self._length

    def reset(self) -> None:
        """Drops the partial unroll and the episode in progress."""
        self._steps.clear()
        self._observation = None

    def add_first(self, timestep: dm_env.TimeStep) -> None:
        """Starts an episode at a FIRST timestep (the partial unroll carries on)."""
        if not timestep.first():
            raise ValueError(f"add_first() needs a FIRST timestep, got {timestep.step_type}")
        if self._observation is not None:
            raise ValueError("add_first() called while an episode is in progress")
        self._observation = _observation(timestep.observation)

    def add(self, action: Any, next_timestep: dm_env.TimeStep,
            extras: Mapping[str, Any] | None = None) -> None:
        """Records ``action`` at the current observation and the timestep it led to."""
        if self._observation is None:
            raise ValueError("add() called before add_first(): start each episode with "
                             "add_first(timestep)")
        if next_timestep.first():
            raise ValueError("add() got a FIRST timestep; start a new episode with add_first()")
        next_obs = _observation(next_timestep.observation)
        step = {
            "observation": self._observation,
            "action": np.array(action),
            "reward": np.float32(_scalar(next_timestep.reward, "reward")),
            "discount": np.float32(_scalar(next_timestep.discount, "discount")),
            "last": np.float32(next_timestep.last()),
            "next_observation": next_obs,
        }
        for key, value in (extras or {}).items():
            if key in step:
                raise ValueError(f"extras key {key!r} clashes with an unroll field")
            step[key] = np.array(value)
        if self._steps and step.keys() != self._steps[0].keys():
            raise ValueError(f"every step of an unroll needs the same extras; got "
                             f"{sorted(step)} after {sorted(self._steps[0])}")
        self._steps.append(step)
        self._observation = None if next_timestep.last() else next_obs
        if len(self._steps) == self._length:
            steps, self._steps = self._steps, []
            self._emit({key: np.stack([s[key] for s in steps]) for key in steps[0]})
