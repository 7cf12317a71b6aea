"""Fixtures shared by the launcher tests."""

from __future__ import annotations

import pytest

# Tests that start Ray: run one at a time in one xdist worker (see addopts in pyproject.toml).
RAY_GROUP = "ray"
RAY_MODULES = ("test_multinode",)  # its own multi-node cluster fixture
# Modules whose module-scoped fixture is costly (test_bad_input runs ~45 CLIs once): all their
# tests in one worker, or each worker would run the fixture again.
ONE_WORKER_MODULES = ("test_bad_input",)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        name = "" if module is None else module.__name__.rpartition(".")[2]
        if "ray_session" in getattr(item, "fixturenames", ()) or name in RAY_MODULES:
            item.add_marker(pytest.mark.xdist_group(RAY_GROUP))
        elif name in ONE_WORKER_MODULES:
            item.add_marker(pytest.mark.xdist_group(name))


@pytest.fixture(scope="module")
def ray_session():
    """A local Ray instance for one test (reused when one is already up); skips without Ray."""
    ray = pytest.importorskip(
        "ray", reason="ray is an optional extra (pip install -e '.[ray]'): Ray launcher untested")
    started = not ray.is_initialized()
    if started:
        # address='local': a new instance, never one another process left running.
        ray.init(address="local", num_cpus=2, include_dashboard=False)
    yield ray
    if started:
        ray.shutdown()
