"""What an actor does with a package's outputs when its head is stochastic: sample an action and
report the behaviour log-probability (NumPy only: actor processes never import JAX).

The learner computes the same densities in JAX (``actorq.agents.on_policy.distributions``);
tests hold the two to each other for fp32 and int8 packages.
"""

from __future__ import annotations

import math

import numpy as np

from actorq.quantization.package import PolicyPackage

_LOG_2PI = math.log(2.0 * math.pi)


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def log_prob(package: PolicyPackage, outputs: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """``log pi(action | outputs)`` per row, float32, under the package's head."""
    if package.head == "categorical":
        logp = _log_softmax(outputs)
        return np.take_along_axis(logp, actions.astype(np.int64)[:, None], axis=-1)[:, 0].astype(
            np.float32)
    if package.head == "gaussian":
        log_std = package.head_log_std.astype(np.float64)
        z = (actions.astype(np.float64) - outputs.astype(np.float64)) / np.exp(log_std)
        return (-0.5 * z**2 - log_std - 0.5 * _LOG_2PI).sum(axis=-1).astype(np.float32)
    raise ValueError(f"a {package.head!r} head has no log-probability")


def sample(package: PolicyPackage, outputs: np.ndarray,
           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(actions, log-probabilities)`` drawn from the head for each row of ``outputs``:
    int32 actions for a categorical head, float32 for a Gaussian one (unbounded: the
    environment clips to its action range)."""
    if package.head == "categorical":
        probs = np.exp(_log_softmax(outputs))
        u = rng.random((len(probs), 1))
        actions = np.minimum((np.cumsum(probs, axis=-1) < u).sum(axis=-1),
                             probs.shape[-1] - 1).astype(np.int32)
    elif package.head == "gaussian":
        std = np.exp(package.head_log_std.astype(np.float64))
        actions = (outputs + std * rng.standard_normal(outputs.shape)).astype(np.float32)
    else:
        raise ValueError(f"a {package.head!r} head is not sampled from")
    return actions, log_prob(package, outputs, actions)


def mode(package: PolicyPackage, outputs: np.ndarray) -> np.ndarray:
    """The head's most likely action per row (evaluation): argmax of the logits, or the mean."""
    if package.head == "categorical":
        return np.argmax(outputs, axis=-1).astype(np.int32)
    return np.asarray(outputs, np.float32)
