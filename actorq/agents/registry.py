"""Agent registry: experiment config -> agent builder (so launchers stay agent-agnostic)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import dm_env

from actorq.agents.a2c.builder import A2CBuilder
from actorq.agents.a2c.config import A2CConfig
from actorq.agents.builder import AgentBuilder
from actorq.agents.d4pg import D4PGBuilder, D4PGConfig
from actorq.agents.ddpg import DDPGBuilder, DDPGConfig
from actorq.agents.dqn import DQNBuilder, DQNConfig
from actorq.agents.ppo.builder import PPOBuilder
from actorq.agents.ppo.config import PPOConfig
from actorq.agents.sac import SACBuilder, SACConfig

_AGENTS: dict[str, tuple[type, type[AgentBuilder]]] = {
    "a2c": (A2CConfig, A2CBuilder),
    "d4pg": (D4PGConfig, D4PGBuilder),
    "ddpg": (DDPGConfig, DDPGBuilder),
    "dqn": (DQNConfig, DQNBuilder),
    "ppo": (PPOConfig, PPOBuilder),
    "sac": (SACConfig, SACBuilder),
}


def agent_config(agent: str, overrides: Mapping[str, Any] | None = None) -> Any:
    """The agent's config dataclass with ``overrides``; unknown fields fail listing valid ones."""
    if agent not in _AGENTS:
        raise ValueError(f"unknown agent {agent!r}; valid: {', '.join(sorted(_AGENTS))}")
    config_cls = _AGENTS[agent][0]
    fields = {f.name for f in dataclasses.fields(config_cls)}
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError(
            f"unknown {agent} learner fields {unknown}; valid: {', '.join(sorted(fields))}"
        )
    for key, value in overrides.items():
        if isinstance(value, list):
            overrides[key] = tuple(value)
    return config_cls(**overrides)


def agent_data_path(agent: str) -> str:
    """``replay`` or ``queue``: how the agent's experience reaches its learner (no env needed)."""
    if agent not in _AGENTS:
        raise ValueError(f"unknown agent {agent!r}; valid: {', '.join(sorted(_AGENTS))}")
    return _AGENTS[agent][1].data_path


def environment_spec(environment: dm_env.Environment) -> dict[str, Any]:
    """The specs a builder needs."""
    return {"observation": environment.observation_spec(), "action": environment.action_spec()}


def make_builder(
    agent: str, learner_overrides: Mapping[str, Any] | None, environment: dm_env.Environment
) -> AgentBuilder:
    """Builds agent ``agent``'s builder for ``environment``."""
    config = agent_config(agent, learner_overrides)
    return _AGENTS[agent][1](config, environment_spec(environment))


def builder_for_config(config: Any) -> AgentBuilder:
    """The builder for an experiment config's ``agent``, ``task`` and ``learner`` fields
    (validates all three early). Launchers and analysis tools build agents through this one
    function, so their networks are identical."""
    from actorq.envs import make_environment

    environment = make_environment(config.task, seed=config.seed)
    try:
        return make_builder(config.agent, config.learner.to_dict(), environment)
    finally:
        environment.close()
