"""DQN ActorQ presets for the paper's Gym tasks (QuaRL Table 3).

Select one as ``--config=configs/dqn_actorq.py:<task>``.
"""

from __future__ import annotations

from typing import Any

import ml_collections

from actorq.agents.dqn.config import DQNConfig
from actorq.envs.registry import tasks_of_family
from configs.common import base_config, learner_fields

# task -> (actor steps, pull period), from the paper.
PRESETS: dict[str, tuple[int, int]] = {
    "cartpole": (60_000, 1000),
    "mountaincar": (200_000, 100),
    "acrobot": (100_000, 1000),
}
SMALL = ("cartpole_small", "acrobot_small", "mountaincar_small", "lunarlander_small")
# The MinAtar paper's DQN (Young & Tian 2019, "DQN" with replay and a target network): its conv
# network, 5M frames, batch 32, one SGD step per env step, replay 100k (starting at 5k), target
# copied every 1000 steps, epsilon 1 -> 0.1 over the first 100k steps, discount 0.99. Not carried
# over: its centered RMSprop (lr 2.5e-4); this learner's Adam at the same rate, with Dopamine's
# epsilon 0.01 / 32 (see cartpole below), and 3-step double-Q targets.
_PIXELS: dict[str, dict[str, Any]] = {}
_PIXELS.update(dict.fromkeys(tasks_of_family("minatar"), dict(
    max_actor_steps=5_000_000, samples_per_insert=32.0, min_size=5_000, max_size=100_000,
    learner=dict(torso="minatar", learning_rate=2.5e-4, batch_size=32, sgd_steps_per_call=1,
                 target_update_period=1000, epsilon_decay_steps=100_000, epsilon_min=0.1,
                 epsilon_max=0.1, discount=0.99, adam_epsilon=3.125e-4, n_step=3),
)))
# Atari: the Nature DQN as CleanRL's dqn_atari.py runs it (10M steps, Adam 1e-4, batch 32, one
# SGD step per 4 env steps, target copied every 1000 SGD steps, learning from 80k steps,
# epsilon 1 -> 0.01 over the first 1M steps, 1-step targets), with its 1M-transition replay:
# the table stores each distinct frame once (~6.9 KB per transition, ~7 GB in all; two stacks
# per transition would be 56 GB; benchmarks/frame_replay.py).
_PIXELS.update(dict.fromkeys(tasks_of_family("atari"), dict(
    max_actor_steps=10_000_000, samples_per_insert=8.0, min_size=80_000, max_size=1_000_000,
    learner=dict(torso="nature", learning_rate=1e-4, batch_size=32, sgd_steps_per_call=1,
                 target_update_period=1000, epsilon_decay_steps=1_000_000, epsilon_min=0.01,
                 epsilon_max=0.01, discount=0.99, n_step=1),
)))

# Settings of the _small presets, after the RL Baselines3 Zoo's tuned DQN (hyperparams/dqn.yml),
# translated to this learner. Zoo -> here:
#   net_arch [256, 256] -> hidden_sizes. 256 wide (not 64): learns as fast, and int8 rounding
#     averages over 256 terms per output instead of 64 (fewer flipped greedy actions).
#   learning_rate, batch_size, gamma -> the same.
#   gradient_steps / train_freq (SGD steps per env step) -> samples_per_insert = that ratio times
#     batch_size, enforced by the replay's rate limiter in every launcher.
#   target_update_interval (env steps; SB3 trains in bursts, so the target is effectively
#     refreshed once per burst) -> target_update_period in SGD steps.
#   learning_starts -> replay.min_size (at least the batch).
#   exploration_fraction * n_timesteps, exploration_final_eps -> epsilon_decay_steps, epsilon_min
#     (actor i of N ends between epsilon_min and epsilon_max).
#   Adam epsilon 1e-8 as in the zoo (CartPole: 3.125e-4, measured below); gradient clipping 10
#     (SB3's max_grad_norm); 3-step double-Q targets where the zoo has 1-step DQN.
_SMALL: dict[str, dict[str, Any]] = {
    # Zoo: 5e4 steps, lr 2.3e-3, batch 64, train_freq 256 / gradient_steps 128, target 10,
    # learning_starts 1000, exploration 0.16 -> 0.04. Measured here (seed 0, 50k steps): the
    # zoo's lr 2.3e-3 with a 128-step target reached 500 but kept collapsing (final 158 with
    # 1-step targets, 500 with 3-step); lr 1e-3 with a 250-step target and 3-step targets held
    # 500 from 34k steps on. SB3 trains in bursts, this learner interleaves: a steadier lr fits.
    # Adam epsilon 3.125e-4 (Dopamine's and DQN Zoo's 0.01 / 32), not 1e-8: once solved, the
    # gradients are tiny and Adam with eps 1e-8 still takes full lr-sized steps along their
    # noise, so the solved policy drifts away and collapses. Measured (fp32 actors, 20 seeds,
    # 50k steps): final eval >= 475 in 18 of 20 seeds (every group of 5: 4 or 5), against 7 of
    # 10 with 1e-8; a Polyak target, a smaller gradient clip, more exploration, fewer updates or
    # a 1000-step target did not help (README, "Does it hold?").
    "cartpole": dict(
        max_actor_steps=50_000, samples_per_insert=32.0, min_size=1000,
        learner=dict(learning_rate=1e-3, batch_size=64, sgd_steps_per_call=4,
                     target_update_period=250, epsilon_decay_steps=8_000, epsilon_min=0.04,
                     epsilon_max=0.04, discount=0.99, adam_epsilon=3.125e-4),
    ),
    # Zoo: 1e5 steps, lr 6.3e-4, batch 128, train_freq 4 / gradient_steps 4, target 250,
    # exploration 0.12 -> 0.1.
    "acrobot": dict(
        max_actor_steps=100_000, samples_per_insert=128.0, min_size=1000,
        learner=dict(learning_rate=6.3e-4, batch_size=128, sgd_steps_per_call=4,
                     target_update_period=250, epsilon_decay_steps=12_000, epsilon_min=0.1,
                     epsilon_max=0.1, discount=0.99),
    ),
    # Zoo: 1.2e5 steps, lr 4e-3, batch 128, buffer 1e4, train_freq 16 / gradient_steps 8,
    # target 600, gamma 0.98, exploration 0.2 -> 0.07, and SB3's DQN targets: the target
    # network's max, not double Q. Measured here (fp32 actors, 120k steps): with double-Q
    # targets (1- or 3-step) no training episode reached the flag and every eval was -200; the
    # max target's overestimation keeps pushing the greedy policy toward unvisited states. With
    # it, 3-step targets reached the flag in all of seeds 0-2 (finals -107.7, -100.2, -112.3);
    # the zoo's 1-step ones in two (finals -100.8, -200, -133.1).
    # Actors: the default int8. MountainCar's Q-values (about -50) are large next to the gaps
    # between its three actions; the recipe keeps DQN's output layer fp32 and bias-corrects the
    # layers below it, so this preset no longer needs its own quantizer. 12 seeds on one machine
    # (docs/ptq.md): ended at >= -110 in 8 (fp32 actors: 9; the former `fp32head_uact_int8`: 5).
    # Zoo (tuned LunarLander-v2, its benchmark 154 +- 79 at 1e5): 1e5 steps, lr 6.3e-4, batch 128,
    # buffer 5e4, train_freq 4 / gradient_steps -1 (one SGD step per env step), target 250,
    # learning_starts 0, exploration 0.12 -> 0.1 (acrobot's settings).
    "lunarlander": dict(
        max_actor_steps=100_000, samples_per_insert=128.0, min_size=1000, max_size=50_000,
        eval_every_steps=5_000,  # episodes run up to 1000 steps
        learner=dict(learning_rate=6.3e-4, batch_size=128, sgd_steps_per_call=4,
                     target_update_period=250, epsilon_decay_steps=12_000, epsilon_min=0.1,
                     epsilon_max=0.1, discount=0.99),
    ),
    "mountaincar": dict(
        max_actor_steps=120_000, samples_per_insert=64.0, min_size=1000, max_size=10_000,
        learner=dict(learning_rate=4e-3, batch_size=128, sgd_steps_per_call=4,
                     target_update_period=300, epsilon_decay_steps=24_000, epsilon_min=0.07,
                     epsilon_max=0.07, discount=0.98, double_q=False),
    ),
}


def get_config(preset: str | None = None) -> ml_collections.ConfigDict:
    """The preset's config; an unknown preset fails listing the valid ones."""
    preset = preset or "cartpole"
    small = preset in SMALL
    pixels = preset in _PIXELS
    task = preset.removesuffix("_small") if small else preset
    if task not in PRESETS and not pixels and not small:
        valid = ", ".join(sorted([*PRESETS, *SMALL, *_PIXELS]))
        raise ValueError(f"unknown dqn_actorq preset {preset!r}; valid: {valid}")
    steps, pull_period = PRESETS.get(task, (0, 100))
    config = base_config("dqn", task, steps, pull_period)
    # One SGD step (batch 256) per 32 env steps: the paper's networks train at 3-15 SGD steps/s
    # on a 2-core CPU, and the rate limiter holds the actors to that.
    config.replay.samples_per_insert = 8.0
    # The paper's 3 x 2048 Q-network (DQNConfig's defaults) with 3-step targets. The learner's
    # arithmetic: fp32, or pure fp16/bf16 with Björck et al.'s fixes (all, none, or names:
    # hadam, loss_scaling, kahan_gradients apply to DQN).
    config.learner = learner_fields(DQNConfig, n_step=3)
    config.replay.max_size = 100_000
    if small or pixels:
        settings = _PIXELS[task] if pixels else _SMALL[task]
        config.launcher = "single"
        config.num_actors = 1
        config.learner.hidden_sizes = (256, 256)
        config.learner.n_step = 3  # faster credit assignment than the zoo's 1 (measured above)
        config.learner.update(settings["learner"])
        config.replay.samples_per_insert = settings["samples_per_insert"]
        config.replay.min_size = settings["min_size"]
        config.replay.max_size = settings.get("max_size", 100_000)
        config.max_actor_steps = settings["max_actor_steps"]
        config.quantizer = settings.get("quantizer", config.quantizer)
        config.eval_every_steps = settings.get(
            "eval_every_steps", config.max_actor_steps // 50 if pixels else 2_000)
        config.eval_episodes = 10
        config.pull_period = 100
    return config
