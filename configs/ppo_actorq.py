"""PPO ActorQ presets for the QuaRL paper's Gym tasks: ``configs/ppo_actorq.py:<task>``.

Hyperparameters are the RL Baselines3 Zoo's tuned PPO settings for each task (CleanRL's
``ppo.py`` for anything the Zoo leaves at SB3's defaults), with these mappings: the Zoo's
``n_envs`` environments are one actor's ``envs_per_actor``; ``n_steps`` is ``unroll_length``;
a batch is one unroll per environment; ``batch_size`` sets ``minibatches`` (steps per batch /
``batch_size``); ``normalize: true`` (VecNormalize) is ``normalize_observations`` and
``normalize_rewards``; ``lin_<x>`` learning rates decay linearly to 0. Not carried over: linear
clip-range schedules (kept constant) and gSDE. MuJoCo tasks are v5 here (the Zoo's are v3/v4).
"""

from __future__ import annotations

import ml_collections

from actorq.agents.ppo.config import PPOConfig
from actorq.envs.registry import tasks_of_family
from configs.common import learner_fields, on_policy_config

# The Zoo's MuJoCo settings share this network and these switches.
_MUJOCO = {"hidden_sizes": (256, 256), "value_hidden_sizes": (256, 256), "activation": "relu",
           "orthogonal_init": False, "initial_log_std": -2.0, "normalize_observations": True,
           "normalize_rewards": True}

# task -> (env steps, environments, learner overrides, linear learning-rate decay)
PRESETS: dict[str, tuple[int, int, dict, bool]] = {
    "cartpole": (100_000, 8, {"unroll_length": 32, "unrolls_per_batch": 8, "epochs": 20,
                              "minibatches": 1, "learning_rate": 1e-3, "gae_lambda": 0.8,
                              "discount": 0.98, "entropy_coef": 0.0}, True),
    "acrobot": (500_000, 16, {"unroll_length": 256, "unrolls_per_batch": 16, "epochs": 4,
                              "minibatches": 64, "learning_rate": 3e-4, "gae_lambda": 0.94,
                              "entropy_coef": 0.0, "normalize_observations": True,
                              "normalize_rewards": True}, False),
    "mountaincar": (1_000_000, 16, {"unroll_length": 16, "unrolls_per_batch": 16, "epochs": 4,
                                    "minibatches": 4, "learning_rate": 3e-4, "gae_lambda": 0.98,
                                    "entropy_coef": 0.0, "normalize_observations": True,
                                    "normalize_rewards": True}, False),
    "halfcheetah": (1_000_000, 1, {**_MUJOCO, "unroll_length": 512, "unrolls_per_batch": 1,
                                   "epochs": 20, "minibatches": 8, "learning_rate": 2.0633e-5,
                                   "discount": 0.98, "gae_lambda": 0.92,
                                   "entropy_coef": 4.01762e-4, "clip_epsilon": 0.1,
                                   "max_gradient_norm": 0.8, "value_coef": 0.58096}, False),
    # The Zoo's Walker2d has no policy_kwargs: SB3's default 64 x 64 tanh network, orthogonal
    # init and log-std 0, not the 256 x 256 ReLU of its HalfCheetah and Hopper.
    "walker2d": (1_000_000, 1, {"normalize_observations": True, "normalize_rewards": True,
                                "unroll_length": 512, "unrolls_per_batch": 1,
                                "epochs": 20, "minibatches": 16, "learning_rate": 5.05041e-5,
                                "discount": 0.99, "gae_lambda": 0.95,
                                "entropy_coef": 5.85045e-4, "clip_epsilon": 0.1,
                                "max_gradient_norm": 1.0, "value_coef": 0.871923}, False),
    "hopper": (1_000_000, 1, {**_MUJOCO, "unroll_length": 512, "unrolls_per_batch": 1,
                              "epochs": 5, "minibatches": 16, "learning_rate": 9.80828e-5,
                              "discount": 0.999, "gae_lambda": 0.99, "entropy_coef": 2.29519e-3,
                              "clip_epsilon": 0.2, "max_gradient_norm": 0.7,
                              "value_coef": 0.835671}, False),
    "bipedalwalker": (5_000_000, 32, {"unroll_length": 2048, "unrolls_per_batch": 32,
                                      "epochs": 10, "minibatches": 1024, "learning_rate": 2.5e-4,
                                      "discount": 0.999, "gae_lambda": 0.95,
                                      "entropy_coef": 1e-3, "normalize_observations": True,
                                      "normalize_rewards": True}, False),
    # MinAtar: PureJaxRL's PPO settings for its MinAtar runs (64 environments x 128 steps, 4
    # epochs of 8 minibatches, lr 5e-4 decayed linearly, clip 0.2, entropy 0.01), here with 16
    # environments per actor and the MinAtar paper's conv network (actorq.networks.conv).
    **{task: (10_000_000, 16, {
        "torso": "minatar", "unroll_length": 128, "unrolls_per_batch": 16, "epochs": 4,
        "minibatches": 8, "learning_rate": 5e-4, "discount": 0.99, "gae_lambda": 0.95,
        "entropy_coef": 0.01, "clip_value_loss": True}, True)
       for task in tasks_of_family("minatar")},
    # Atari: CleanRL's ppo_atari.py (8 environments x 128 steps, 4 epochs of 4 minibatches,
    # lr 2.5e-4 decayed linearly, clip 0.1, entropy 0.01, clipped value loss, 10M steps) with
    # the Nature CNN.
    **{task: (10_000_000, 8, {
        "torso": "nature", "unroll_length": 128, "unrolls_per_batch": 8, "epochs": 4,
        "minibatches": 4, "learning_rate": 2.5e-4, "discount": 0.99, "gae_lambda": 0.95,
        "entropy_coef": 0.01, "clip_epsilon": 0.1, "clip_value_loss": True}, True)
       for task in tasks_of_family("atari")},
    # A fast continuous task for tests and smoke runs (the Zoo's Pendulum settings, no gSDE).
    "pendulum": (100_000, 4, {"unroll_length": 1024, "unrolls_per_batch": 4, "epochs": 10,
                              "minibatches": 64, "learning_rate": 1e-3, "discount": 0.9,
                              "gae_lambda": 0.95, "entropy_coef": 0.0,
                              "normalize_observations": True, "normalize_rewards": True}, False),
}


def get_config(preset: str | None = None) -> ml_collections.ConfigDict:
    """The preset's config; an unknown preset fails listing the valid ones."""
    preset = preset or "cartpole"
    if preset not in PRESETS:
        raise ValueError(f"unknown ppo_actorq preset {preset!r}; valid: "
                         f"{', '.join(sorted(PRESETS))}")
    steps, envs, overrides, decay = PRESETS[preset]
    return on_policy_config("ppo", preset, steps, envs, learner_fields(PPOConfig, **overrides),
                            decay_learning_rate=decay)
