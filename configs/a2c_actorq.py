"""A2C ActorQ presets for the QuaRL paper's Gym tasks: ``configs/a2c_actorq.py:<task>``.

Hyperparameters are the RL Baselines3 Zoo's tuned A2C settings (SB3's A2C defaults where the Zoo
sets nothing: 5-step unrolls, RMSprop 7e-4, n-step returns), mapped as in
``configs/ppo_actorq.py``. gSDE (the Zoo's ``use_sde``) is on for HalfCheetah, where it was measured
(7 seeds with int8 actors: mean 3363 against 1593 without, docs/algorithms.md); the other continuous
presets, for which the Zoo also uses it, keep a state-independent log-std starting at -2 unless
``--config.learner.gsde=True``.
"""

from __future__ import annotations

import ml_collections

from actorq.agents.a2c.config import A2CConfig
from actorq.envs.registry import tasks_of_family
from configs.common import learner_fields, on_policy_config

_CONTINUOUS = {"orthogonal_init": False, "initial_log_std": -2.0, "unroll_length": 8,
               "gae_lambda": 0.9, "value_coef": 0.4, "learning_rate": 9.6e-4,
               "normalize_observations": True, "normalize_rewards": True}

# task -> (env steps, environments, learner overrides, linear learning-rate decay)
PRESETS: dict[str, tuple[int, int, dict, bool]] = {
    "cartpole": (500_000, 8, {"unrolls_per_batch": 8}, False),
    "acrobot": (500_000, 16, {"unrolls_per_batch": 16, "normalize_observations": True}, False),
    "mountaincar": (1_000_000, 16, {"unrolls_per_batch": 16, "normalize_observations": True,
                                    "normalize_rewards": True}, False),
    # LunarLander-v3 (Box2D, discrete): the Zoo's tuned LunarLander-v2 A2C (benchmark 155.8 at 2e5).
    "lunarlander": (200_000, 8, {"unrolls_per_batch": 8, "discount": 0.995,
                                 "learning_rate": 8.3e-4, "entropy_coef": 1e-5}, True),
    "halfcheetah": (1_000_000, 4, {**_CONTINUOUS, "unrolls_per_batch": 4, "gsde": True}, True),
    "walker2d": (1_000_000, 4, {**_CONTINUOUS, "unrolls_per_batch": 4}, True),
    "bipedalwalker": (5_000_000, 16, {**_CONTINUOUS, "unrolls_per_batch": 16}, True),
    "pendulum": (200_000, 8, {**_CONTINUOUS, "unrolls_per_batch": 8, "discount": 0.9}, True),
    # Pixels: the Zoo's Atari A2C (16 environments, 5-step unrolls, RMSprop 7e-4, entropy 0.01,
    # value coefficient 0.25, 10M steps) with the Nature CNN, and the same on MinAtar with the
    # MinAtar network.
    **{task: (10_000_000, 16, {"torso": "nature", "unrolls_per_batch": 16,
                               "entropy_coef": 0.01, "value_coef": 0.25}, False)
       for task in tasks_of_family("atari")},
    **{task: (10_000_000, 16, {"torso": "minatar", "unrolls_per_batch": 16,
                               "entropy_coef": 0.01, "value_coef": 0.25}, False)
       for task in tasks_of_family("minatar")},
}


def get_config(preset: str | None = None) -> ml_collections.ConfigDict:
    """The preset's config; an unknown preset fails listing the valid ones."""
    preset = preset or "cartpole"
    if preset not in PRESETS:
        raise ValueError(f"unknown a2c_actorq preset {preset!r}; valid: "
                         f"{', '.join(sorted(PRESETS))}")
    steps, envs, overrides, decay = PRESETS[preset]
    return on_policy_config("a2c", preset, steps, envs, learner_fields(A2CConfig, **overrides),
                            decay_learning_rate=decay)
