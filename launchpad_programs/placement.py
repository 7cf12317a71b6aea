"""Where nodes run.

``config.learner_device = auto | cpu | gpu``: the learner's device. On Ray the learner (the
program's main node) runs in the launching process: start the experiment on the cluster node
that should host it (the head, or a GPU node joined with ``ray_address``).

``config.ray_actor_placement = spread | pack`` and ``config.ray_actor_resources`` place the actor
nodes over a Ray cluster's nodes (:func:`ray_actor_options`).

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
RAY_PLACEMENTS = {"spread": "SPREAD", "pack": "DEFAULT"}


def parse_resources(spec: str) -> dict[str, float]:
    """``"actor_host=1,gpu_box=0.5"`` -> ``{"actor_host": 1.0, "gpu_box": 0.5}``."""
    resources: dict[str, float] = {}
    for item in (part.strip() for part in str(spec or "").split(",")):
        if not item:
            continue
        name, sep, amount = item.partition("=")
        try:
            value = float(amount) if sep else float("nan")
        except ValueError:
            value = float("nan")
        if not name.strip() or not value > 0:
            raise ValueError(f"ray_actor_resources: {item!r} is not NAME=AMOUNT with AMOUNT > 0 "
                             "(e.g. 'actor_host=1')")
        resources[name.strip()] = value
    return resources


def ray_learner_options(config: Any) -> dict[str, Any]:
    """The learner's (main node's) Ray options: ``ray_learner_resources`` it needs on the node
    the experiment is launched from (the Ray launcher checks them before anything starts)."""
    resources = parse_resources(config.ray_learner_resources)
    return {"resources": resources} if resources else {}


def ray_actor_options(config: Any) -> dict[str, Any]:
    """The Ray actor options of an actor node: ``spread`` places actors on different nodes as
    long as there are nodes with room (Ray's ``SPREAD``), ``pack`` uses Ray's default, which fills
    a node before it uses the next; ``ray_actor_resources`` are custom resources every actor needs,
    so only nodes that offer them take actors."""
    placement = str(config.ray_actor_placement)
    if placement not in RAY_PLACEMENTS:
        raise ValueError(f"unknown ray_actor_placement {placement!r}; valid: "
                         f"{', '.join(RAY_PLACEMENTS)}")
    options: dict[str, Any] = {"scheduling_strategy": RAY_PLACEMENTS[placement]}
    resources = parse_resources(config.ray_actor_resources)
    if resources:
        options["resources"] = resources
    return options


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
