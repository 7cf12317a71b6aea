"""MinAtar games (Young & Tian 2019) as ``dm_env`` environments with uint8 10x10xC observations.

Built on the ``minatar`` package (NumPy), not gymnax's JAX port: actors are NumPy processes
that must not import JAX. (The module is not called ``minatar.py`` so that it can never shadow
the package when this directory is on ``sys.path``.)

- Sticky actions with probability 0.1, as in the MinAtar paper (``minatar.Environment``'s
  default): with that probability the previous action is repeated instead of the chosen one.
  Difficulty ramping is on (MinAtar's default, and gymnax's).
- The minimal action set, as gymnax (and so PureJaxRL's PPO, our reference) uses: breakout 3,
  space_invaders 4, seaquest 6, asterix 5, freeway 3 actions. An action is an int index into
  it. minatar 1.0.15 has no ``use_minimal_action_set`` argument; the index is mapped through
  ``Environment.minimal_action_set()`` here.
- The observation is ``env.state()``, a bool ``[10, 10, C]`` array, as ``Array((10, 10, C),
  uint8)`` of 0/1 (C: breakout 4, space_invaders 6, seaquest 10, asterix 4, freeway 7).
- Rewards are MinAtar's own (0 or 1 per step; not clipped). A game over is a LAST timestep with
  discount 0.
- Seeding: ``seed`` seeds the one ``RandomState`` that MinAtar shares between the game and the
  sticky actions (``Environment.seed``); ``None`` leaves both on fresh OS entropy. Later
  episodes continue that RNG, as the gymnasium tasks do.

Time limit. Breakout, Space Invaders, Seaquest and Asterix have no time limit in MinAtar: a
good enough policy plays forever (Breakout refills its bricks, Seaquest's oxygen is refilled by
surfacing). Freeway ends itself after 2,501 steps (a termination). We cap every game at
gymnax's ``max_steps_in_episode`` (its ``EnvParams`` defaults in
``gymnax/environments/minatar/*.py``): 1,000 steps, and 2,500 for Freeway, so episode lengths
and returns compare with gymnax/PureJaxRL numbers. The cap is a truncation: a LAST timestep
with discount 1 (gymnax before its terminated/truncated split reported it as ``done``, i.e.
without bootstrapping). ``make_minatar_environment(..., max_episode_steps=None)`` removes it.

Not the same as gymnax/PureJaxRL: gymnax's MinAtar has no sticky actions (only an opt-in
wrapper, recently added), so its PPO numbers are for a deterministic-action protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dm_env
import numpy as np
from dm_env import specs

from actorq.envs.base import CheckedEnvironment
from actorq.envs.gym_adapter import discrete_action_index

STICKY_ACTION_PROB = 0.1

# gymnax's max_steps_in_episode per game (see the module docstring).
MAX_EPISODE_STEPS: Mapping[str, int] = {
    "breakout": 1000,
    "space_invaders": 1000,
    "seaquest": 1000,
    "asterix": 1000,
    "freeway": 2500,
}

_DEFAULT = object()


class MinAtarEnvironment(CheckedEnvironment):
    """A ``minatar.Environment`` as a ``dm_env`` environment; see the module docstring."""

    def __init__(
        self,
        game: str,
        seed: int | None = None,
        name: str | None = None,
        max_episode_steps: int | None = None,
        sticky_action_prob: float = STICKY_ACTION_PROB,
    ) -> None:
        """Build MinAtar ``game``; ``max_episode_steps=None`` leaves MinAtar's own episodes."""
        if max_episode_steps is not None and max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1 or None, got {max_episode_steps}")
        if not 0.0 <= sticky_action_prob <= 1.0:
            raise ValueError(f"sticky_action_prob must be in [0, 1], got {sticky_action_prob}")
        super().__init__(name or f"minatar_{game}")
        import minatar

        self._env = minatar.Environment(game, sticky_action_prob=sticky_action_prob)
        self._env.seed(seed)  # None keeps MinAtar's unseeded RandomStates
        self._actions = tuple(int(a) for a in self._env.minimal_action_set())
        self._max_episode_steps = max_episode_steps
        self._steps = 0
        self._reset_next_step = True
        # 0/1 channels, bounded: a pixel network scales codes by 1 / maximum.
        self._observation_spec = specs.BoundedArray(
            tuple(self._env.state_shape()), np.uint8, minimum=0, maximum=1, name="observation"
        )
        self._action_spec = specs.DiscreteArray(len(self._actions), dtype=np.int32, name="action")

    @property
    def minatar_env(self) -> Any:
        """The wrapped ``minatar.Environment``."""
        return self._env

    @property
    def action_set(self) -> tuple[int, ...]:
        """MinAtar's full-set action for each action index (the game's minimal action set)."""
        return self._actions

    @property
    def max_episode_steps(self) -> int | None:
        """The truncation step count, or ``None``."""
        return self._max_episode_steps

    def _observation(self) -> np.ndarray:
        return self._env.state().astype(np.uint8)

    def _reset(self) -> dm_env.TimeStep:
        self._env.reset()
        self._steps = 0
        self._reset_next_step = False
        return dm_env.restart(self._observation())

    def _step(self, action: Any) -> dm_env.TimeStep:
        if self._reset_next_step:
            return self._reset()
        index = discrete_action_index(action, len(self._actions))
        reward, terminal = self._env.act(self._actions[index])
        self._steps += 1
        reward = np.float32(reward)
        observation = self._observation()
        if terminal:
            self._reset_next_step = True
            return dm_env.TimeStep(dm_env.StepType.LAST, reward, np.float32(0.0), observation)
        if self._max_episode_steps is not None and self._steps >= self._max_episode_steps:
            self._reset_next_step = True
            return dm_env.truncation(reward, observation, discount=np.float32(1.0))
        return dm_env.transition(reward, observation, discount=np.float32(1.0))

    def observation_spec(self) -> specs.Array:
        """``Array((10, 10, C), uint8, name='observation')``."""
        return self._observation_spec

    def action_spec(self) -> specs.DiscreteArray:
        """``DiscreteArray(num_values=len(minimal action set), dtype=int32)``."""
        return self._action_spec

    def close(self) -> None:
        """Nothing to release (MinAtar renders nothing unless asked)."""


def make_minatar_environment(
    game: str,
    seed: int | None = None,
    name: str | None = None,
    max_episode_steps: Any = _DEFAULT,
    sticky_action_prob: float = STICKY_ACTION_PROB,
) -> MinAtarEnvironment:
    """MinAtar ``game`` (a key of :data:`MAX_EPISODE_STEPS`) with gymnax's time limit.

    ``max_episode_steps``: default :data:`MAX_EPISODE_STEPS` for the game; an int replaces it;
    ``None`` removes the truncation. ``sticky_action_prob``: 0 plays gymnax's protocol.
    """
    if max_episode_steps is _DEFAULT:
        max_episode_steps = MAX_EPISODE_STEPS[game]
    return MinAtarEnvironment(game, seed=seed, name=name, max_episode_steps=max_episode_steps,
                              sticky_action_prob=sticky_action_prob)
