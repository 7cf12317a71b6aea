"""PPO builder: the on-policy builder with PPO's learner."""

from __future__ import annotations

from actorq.agents.on_policy.builder import OnPolicyBuilder


class PPOBuilder(OnPolicyBuilder):
    """PPO on any task: categorical head for discrete actions, Gaussian for continuous."""

    name = "ppo"
    learner_factory = "actorq.agents.ppo.learning:make_learner"
