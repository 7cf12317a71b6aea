"""Fixtures shared by the launcher tests."""

from __future__ import annotations

import pytest


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
