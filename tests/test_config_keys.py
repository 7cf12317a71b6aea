"""A config default lives in one place: the presets (configs/common.py and each agent's config).

Code that reads a config key with ``config.get(key, default)`` would carry a second default and
silently run a key that no preset defines. These tests run the entry points' code paths with
``ConfigDict.get`` made strict (a key the config lacks fails), so such a read cannot come back.
"""

from __future__ import annotations

import ml_collections
import pytest

from configs import d4pg_actorq, dqn_actorq, sac_actorq
from launchpad_programs.actorq_program import make_program
from launchpad_programs.launch import check_config, run_experiment

_ORIGINAL_GET = ml_collections.ConfigDict.get


@pytest.fixture
def strict_get(monkeypatch):
    """``ConfigDict.get`` that records every key a config does not define."""
    missing: list[str] = []

    def get(self, key, default=None):
        if key not in self:
            missing.append(key)
        return _ORIGINAL_GET(self, key, default)

    monkeypatch.setattr(ml_collections.ConfigDict, "get", get)
    return missing


def _tiny(config: ml_collections.ConfigDict, run_dir) -> ml_collections.ConfigDict:
    config.run_dir = str(run_dir)
    config.max_actor_steps = 400
    config.eval_every_steps = 400
    config.eval_episodes = 1
    config.checkpoint_every_steps = 400
    config.track_energy = False
    config.replay.min_size = 100
    if "hidden_sizes" in config.learner:
        config.learner.hidden_sizes = (16, 16)
    if "batch_size" in config.learner:
        config.learner.batch_size = 16
    return config


@pytest.mark.parametrize("module, preset", [
    (dqn_actorq, "cartpole_small"),
    (d4pg_actorq, "cartpole_balance_small"),
    (sac_actorq, "cartpole_balance_small"),
])
def test_a_run_reads_only_keys_its_preset_defines(strict_get, tmp_path, module, preset):
    config = _tiny(module.get_config(preset), tmp_path / "run")
    summary = run_experiment(config)
    assert summary["actor_steps"] == 400
    assert strict_get == [], f"keys read with a default but not in the preset: {strict_get}"


@pytest.mark.parametrize("module, preset", [
    (dqn_actorq, "cartpole"),
    (d4pg_actorq, "walker_stand"),
    (sac_actorq, "walker_stand"),
])
def test_building_a_distributed_program_reads_only_defined_keys(strict_get, module, preset):
    config = module.get_config(preset)
    check_config(config)
    program = make_program(config)
    names = {n.name for n in program.nodes}
    assert {"learner", "evaluator", *(f"actor_{i}" for i in range(config.num_actors))} <= names
    assert strict_get == [], f"keys read with a default but not in the preset: {strict_get}"


def test_the_strict_get_catches_an_undefined_key(strict_get):
    config = dqn_actorq.get_config("cartpole_small")
    assert config.get("no_such_field", 3) == 3
    assert strict_get == ["no_such_field"]


@pytest.mark.parametrize("agent", ["a2c", "d4pg", "ddpg", "dqn", "ppo", "sac"])
def test_every_preset_defines_every_learner_field(agent):
    """A preset's ``learner`` section holds exactly the agent config's fields: a field missing from
    it could not be set from the command line or by a study (the CLI locks the config; the SAC
    presets once lacked ``master_weights``, so ``lowp_study --variants=fp16_amp`` failed)."""
    import dataclasses
    import importlib

    from actorq.agents.registry import _AGENTS

    module = importlib.import_module(f"configs.{agent}_actorq")
    fields = {f.name for f in dataclasses.fields(_AGENTS[agent][0])}
    presets = [p for name in ("PRESETS", "SMALL", "CPU", "_PIXELS")
               for p in getattr(module, name, ())]
    assert presets
    for preset in dict.fromkeys(presets):
        learner = set(module.get_config(preset).learner)
        assert learner == fields, (preset, sorted(fields - learner), sorted(learner - fields))
