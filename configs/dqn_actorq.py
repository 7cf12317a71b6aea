"""DQN ActorQ presets for the paper's Gym tasks (QuaRL Table 3).

Select one as ``--config=configs/dqn_actorq.py:<task>``.
"""

from __future__ import annotations

import ml_collections

from configs.common import base_config

# task -> (actor steps, pull period), from the paper.
PRESETS: dict[str, tuple[int, int]] = {
    "cartpole": (60_000, 1000),
    "mountaincar": (200_000, 100),
    "acrobot": (100_000, 1000),
}
SMALL = ("cartpole_small",)


def get_config(preset: str | None = None) -> ml_collections.ConfigDict:
    """The preset's config; an unknown preset fails listing the valid ones."""
    preset = preset or "cartpole"
    small = preset in SMALL
    task = preset.removesuffix("_small") if small else preset
    if task not in PRESETS:
        valid = ", ".join(sorted([*PRESETS, *SMALL]))
        raise ValueError(f"unknown dqn_actorq preset {preset!r}; valid: {valid}")
    steps, pull_period = PRESETS[task]
    config = base_config("dqn", task, steps, pull_period)
    config.replay.max_times_sampled = 0  # DQN: plain FIFO replay, items stay until evicted
    config.replay.samples_per_insert = 8.0
    config.learner = ml_collections.ConfigDict(
        {
            "hidden_sizes": (2048, 2048, 2048),
            "n_step": 3,
            "discount": 0.99,
            "learning_rate": 1e-4,
            "batch_size": 256,
            "target_update_period": 100,
            "sgd_steps_per_call": 1,
            "huber_delta": 1.0,
            "max_gradient_norm": 10.0,
            "epsilon_start": 1.0,
            "epsilon_min": 0.01,
            "epsilon_max": 0.1,
            "epsilon_decay_steps": 10_000,
            "prioritized": False,
            "importance_beta": 0.4,
            "priority_epsilon": 1e-3,
            "qat_bits": ml_collections.FieldReference(None, field_type=int),
            "qat_delay_steps": 0,
        }
    )
    config.replay.max_size = 100_000
    if small:
        config.launcher = "single"
        config.num_actors = 1
        config.learner.hidden_sizes = (64, 64)
        config.learner.learning_rate = 1e-3
        config.learner.batch_size = 64
        config.learner.sgd_steps_per_call = 4
        config.learner.epsilon_decay_steps = 5_000
        config.learner.target_update_period = 500
        config.replay.samples_per_insert = 32.0
        config.max_actor_steps = 20_000
        config.eval_every_steps = 1_000
        config.pull_period = 100
        config.replay.min_size = 500
    return config
