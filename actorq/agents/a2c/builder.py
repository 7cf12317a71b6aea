"""A2C builder: the on-policy builder with A2C's learner."""

from __future__ import annotations

from actorq.agents.on_policy.builder import OnPolicyBuilder


class A2CBuilder(OnPolicyBuilder):
    """A2C on any task: categorical head for discrete actions, Gaussian for continuous."""

    name = "a2c"
    learner_factory = "actorq.agents.a2c.learning:make_learner"
