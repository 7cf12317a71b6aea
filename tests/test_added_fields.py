"""A config field added after runs were saved must say how to resume those runs.

``--resume`` accepts a field that a run's ``config.json`` lacks only at the value that reproduces
the code the run ran, and only if that value is registered in ``ADDED_FIELDS_OFF``; an
unregistered new field would be accepted at any value, silently changing a resumed run. These
tests compare each agent's fields with ``tests/config_fields.json`` (the fields as of the last
registration), so a new field fails here until it is registered.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from actorq.analysis.runs import ADDED_FIELDS_OFF, config_to_dict, flatten_config

KNOWN_FIELDS = json.loads((Path(__file__).parent / "config_fields.json").read_text())


def _fields(agent: str) -> set[str]:
    module = importlib.import_module(f"configs.{agent}")
    return set(flatten_config(config_to_dict(module.get_config())))


def unregistered_new_fields(agent: str, known: set[str]) -> list[str]:
    return sorted(_fields(agent) - known - set(ADDED_FIELDS_OFF))


@pytest.mark.parametrize("agent", sorted(KNOWN_FIELDS))
def test_every_field_added_since_the_snapshot_is_registered(agent):
    new = unregistered_new_fields(agent, set(KNOWN_FIELDS[agent]))
    assert not new, (
        f"{agent}: fields {new} are new. Add each to ADDED_FIELDS_OFF (actorq/analysis/runs.py) "
        "with the value that reproduces the code from before it, so that --resume of an older run "
        "refuses any other value; then list it in tests/config_fields.json.")


@pytest.mark.parametrize("agent", sorted(KNOWN_FIELDS))
def test_the_snapshot_lists_no_removed_field(agent):
    gone = sorted(set(KNOWN_FIELDS[agent]) - _fields(agent))
    assert not gone, f"{agent}: {gone} no longer exist; remove them from tests/config_fields.json"


def test_an_unregistered_new_field_is_caught():
    known = set(KNOWN_FIELDS["dqn_actorq"])
    assert unregistered_new_fields("dqn_actorq", known) == []
    assert unregistered_new_fields("dqn_actorq", known - {"learner.batch_size"}) == [
        "learner.batch_size"]
    # A registered field is allowed to be new.
    assert unregistered_new_fields("ddpg_actorq", set(KNOWN_FIELDS["ddpg_actorq"])
                                   - {"learner.learning_rate_decay_steps"}) == []


def test_every_registered_field_exists_in_some_agent():
    every = set().union(*(_fields(agent) for agent in KNOWN_FIELDS))
    assert set(ADDED_FIELDS_OFF) <= every, sorted(set(ADDED_FIELDS_OFF) - every)


def test_the_snapshot_covers_every_agent_config():
    agents = {p.stem for p in (Path(__file__).parents[1] / "configs").glob("*_actorq.py")}
    assert agents == set(KNOWN_FIELDS)
