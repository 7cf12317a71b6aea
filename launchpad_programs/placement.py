"""Where the learner runs: ``config.learner_device = auto | cpu | gpu``.

The learner process puts its jitted update, the batches it samples and the quantization of each
published policy on that device (JAX's default device for the run); packages come back to the
host once per version as bytes. Actors stay CPU processes (ONNX Runtime, no JAX) whatever the
learner uses.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

LEARNER_DEVICES = ("auto", "cpu", "gpu")


def _devices(platform: str) -> list[Any]:
    import jax

    try:
        return list(jax.devices(platform))
    except RuntimeError:  # no such backend in this jaxlib, or it failed to initialise
        return []


def select_learner_device(request: str) -> Any:
    """The JAX device for ``request``: ``auto`` takes JAX's default device (an accelerator when
    there is one), ``cpu`` the host, ``gpu`` the first GPU or a clear error when none is
    visible."""
    import jax

    if request not in LEARNER_DEVICES:
        raise ValueError(
            f"unknown learner_device {request!r}; valid: {', '.join(LEARNER_DEVICES)}")
    if request == "cpu":
        return _devices("cpu")[0]
    if request == "gpu":
        gpus = _devices("gpu")
        if not gpus:
            seen = ", ".join(sorted({d.platform for d in jax.devices()}))
            raise ValueError(
                f"learner_device='gpu' but JAX sees no GPU (devices: {seen}). Install a CUDA "
                "build of jaxlib (pip install -U 'jax[cuda12]'), check JAX_PLATFORMS, or use "
                "learner_device='auto' or 'cpu'.")
        return gpus[0]
    return jax.devices()[0]


@contextlib.contextmanager
def learner_device_scope(request: str) -> Iterator[Any]:
    """Runs the block with the selected device as JAX's default device; yields the device."""
    import jax

    device = select_learner_device(request)
    with jax.default_device(device):
        yield device
