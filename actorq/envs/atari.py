"""Atari 2600 games (ale-py) as ``dm_env`` environments with uint8 84x84x4 observations.

The protocol is the classic Nature-DQN one, as CleanRL's Atari scripts run it:

- ``ALE/<Game>-v5`` built with ``frameskip=1``, ``repeat_action_probability=0.0`` (no sticky
  actions) and the minimal action set (``full_action_space=False``). v5's own default, sticky
  actions with probability 0.25 and a frame skip of 4 inside the emulator (Machado et al. 2018),
  is a different protocol whose scores do not compare with Nature-DQN/CleanRL numbers.
- gymnasium's ``AtariPreprocessing(noop_max=30, frame_skip=4, screen_size=84,
  grayscale_obs=True, terminal_on_life_loss=False, scale_obs=False)``: up to 30 no-ops at
  reset, each agent step repeats the action for 4 frames and max-pools the last two, grayscale,
  resized to 84x84, kept as uint8; then ``FrameStackObservation(stack_size=4)``.
- The observation is ``Array((84, 84, 4), uint8)``, channels last (the stack is transposed),
  never converted to float here: scaling to [0, 1] is the network's job.
- Actions are an int index into the game's minimal action set, as for the ``gym`` family.
- Time limit: gymnasium registers ``ALE/*-v5`` without a ``TimeLimit`` wrapper
  (``max_episode_steps=None``); the limit is ALE's own ``max_num_frames_per_episode=108_000``,
  counted in emulator frames. With ``frameskip=1`` in ALE and 4 frames per agent step that is
  27,000 agent steps (30 minutes of play at 60 Hz; the reset no-ops count too). ALE reports it
  as ``truncated``: a LAST timestep with discount 1.

Training versus evaluation (``make_atari_environment(..., evaluation=...)``):

- Training (``evaluation=False``): each reward is clipped to its sign (``np.sign``, float32),
  and a lost life is returned as a MID timestep with discount 0: the game goes on, the value
  target is cut at the life loss (no bootstrap across it, no later reward in an n-step return),
  while the episode, and the return summed over it, stay the whole game (up to the last life or
  the time limit). This is DQN's ``EpisodicLifeEnv`` without splitting the episode.
  :attr:`AtariEnvironment.raw_episode_return` keeps the unclipped game score.
- Evaluation (``evaluation=True``): raw rewards, discount 1 at every step except the game's
  real end (discount 0) or ALE's time limit (discount 1).

Not included: a FIRE press at reset (OpenAI Baselines' and CleanRL's ``FireResetEnv``); in
Breakout the agent has to learn to press FIRE to launch each ball.
"""

from __future__ import annotations

from typing import Any

import cv2
import dm_env
import gymnasium as gym
import numpy as np
from dm_env import specs

from actorq.envs.base import STACKED_FRAMES
from actorq.envs.gym_adapter import GymAdapter, _gym_make

SCREEN_SIZE = 84
FRAME_STACK = 4
FRAME_SKIP = 4
NOOP_MAX = 30
# ALE's v5 registration default, in emulator frames (27,000 agent steps at FRAME_SKIP 4).
MAX_FRAMES_PER_EPISODE = 108_000
OBS_TYPE = "grayscale"


class AtariEnvironment(GymAdapter):
    """A preprocessed ALE env as a ``dm_env`` environment; see the module docstring.

    Seeding, resets, the terminated/truncated -> discount mapping and the action check are
    :class:`~actorq.envs.gym_adapter.GymAdapter`'s; this class makes the observation a
    channels-last uint8 copy and, in training mode, clips rewards and cuts the discount at a
    life loss.
    """

    def __init__(
        self,
        env: gym.Env,
        seed: int | None = None,
        name: str | None = None,
        evaluation: bool = False,
    ) -> None:
        """Wrap ``env`` (ALE under ``AtariPreprocessing`` + ``FrameStackObservation``).

        ``seed`` is used once, on the first reset; ``evaluation`` selects raw rewards and no
        life-loss discount.
        """
        super().__init__(env, seed=seed, name=name)
        stack_shape = tuple(env.observation_space.shape)  # (stack, height, width)
        if len(stack_shape) != 3 or env.observation_space.dtype != np.uint8:
            raise TypeError(
                f"AtariEnvironment needs uint8 (stack, height, width) frames, got "
                f"{env.observation_space}"
            )
        # Bounded: a pixel network scales codes by 1 / maximum (actorq.agents.builder).
        self._observation_spec = specs.BoundedArray(
            (*stack_shape[1:], stack_shape[0]), np.uint8, minimum=0, maximum=255,
            name=STACKED_FRAMES,
        )
        self._ale = env.unwrapped.ale
        self._evaluation = bool(evaluation)
        self._lives = 0
        self._raw_episode_return = 0.0

    @property
    def evaluation(self) -> bool:
        """Whether rewards are raw and life losses keep discount 1."""
        return self._evaluation

    @property
    def raw_episode_return(self) -> float:
        """The unclipped game score of the current (or just finished) episode."""
        return self._raw_episode_return

    def _convert_observation(self, observation: Any) -> np.ndarray:
        # (stack, H, W) -> a fresh C-contiguous (H, W, stack) uint8 array, no float anywhere.
        # OpenCV's channel merge: ~8 us against ~80 us for NumPy's strided transpose copy.
        return cv2.merge(list(observation))

    def _reset(self) -> dm_env.TimeStep:
        timestep = super()._reset()
        self._lives = self._ale.lives()
        self._raw_episode_return = 0.0
        return timestep

    def _step(self, action: Any) -> dm_env.TimeStep:
        timestep = super()._step(action)
        if timestep.first():  # a step after LAST reset the game (our _reset ran)
            return timestep
        self._raw_episode_return += float(timestep.reward)
        lives = self._ale.lives()
        life_lost = lives < self._lives
        self._lives = lives
        if self._evaluation:
            return timestep
        # A life lost on the time limit's step also cuts (LAST, discount 0).
        discount = np.float32(0.0) if life_lost else timestep.discount
        return timestep._replace(reward=np.sign(timestep.reward), discount=discount)


def make_atari_environment(
    game: str,
    seed: int | None = None,
    name: str | None = None,
    evaluation: bool = False,
    max_num_frames_per_episode: int = MAX_FRAMES_PER_EPISODE,
) -> AtariEnvironment:
    """``ALE/<game>-v5`` with the Nature-DQN preprocessing, as an :class:`AtariEnvironment`.

    Args:
      game: the ALE game name, e.g. ``"Pong"`` (the registry maps task names to games).
      seed: seeds ALE and the no-op draws on the first reset; ``None`` draws OS entropy.
      name: the task name used in errors (default: the gymnasium id).
      evaluation: raw rewards and no life-loss discount (see the module docstring).
      max_num_frames_per_episode: ALE's time limit in emulator frames (the v5 default).
    """
    import ale_py

    gym.register_envs(ale_py)
    env = _gym_make(
        f"ALE/{game}-v5",
        frameskip=1,
        repeat_action_probability=0.0,
        full_action_space=False,
        max_num_frames_per_episode=max_num_frames_per_episode,
        # AtariPreprocessing reads ALE's screen itself; this only makes the frame that the ALE env
        # returns (and the wrapper discards) at every emulator frame a cheaper grayscale one
        # instead of RGB: same observations, ~10% more steps/s.
        obs_type=OBS_TYPE,
    )
    env = gym.wrappers.AtariPreprocessing(
        env,
        noop_max=NOOP_MAX,
        frame_skip=FRAME_SKIP,
        screen_size=SCREEN_SIZE,
        grayscale_obs=True,
        terminal_on_life_loss=False,
        scale_obs=False,
    )
    env = gym.wrappers.FrameStackObservation(env, stack_size=FRAME_STACK)
    return AtariEnvironment(env, seed=seed, name=name, evaluation=evaluation)
