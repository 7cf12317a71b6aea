"""What an actor does with a package's outputs when its head is stochastic: sample an action and
report the behaviour log-probability (NumPy only: actor processes never import JAX).

The learner computes the same densities in JAX (``actorq.agents.on_policy.distributions``);
tests hold the two to each other for fp32 and int8 packages.

A ``gsde`` package's network outputs the mean and, after it, the last hidden features ``z``
(its output layer is ``[W | I]``: the features pass through it unchanged, so every runtime
computes them with no change). The action is ``mean + z @ E`` with one noise matrix ``E`` per
environment, held for a number of steps (:class:`GsdeNoise`).
"""

from __future__ import annotations

import math

import numpy as np

from actorq.quantization.package import PolicyPackage

_LOG_2PI = math.log(2.0 * math.pi)
# As ``actorq.agents.on_policy.distributions.GSDE_EPSILON`` (the learner's side).
GSDE_EPSILON = 1e-6


class GsdeNoise:
    """Each environment's gSDE noise, redrawn every ``period`` calls (one call: one step of
    every environment; the on-policy agents redraw once per unroll, as SB3 does once per
    rollout). It holds standard-normal draws and scales them by the package's current std, so
    a newly pulled package explores with its own ``log_std`` at once."""

    def __init__(self, period: int) -> None:
        if period < 1:
            raise ValueError(f"gSDE noise period must be >= 1 step, got {period}")
        self._period = int(period)
        self._calls = 0
        self._draws: np.ndarray | None = None

    def matrices(self, log_std: np.ndarray, envs: int,
                 rng: np.random.Generator) -> np.ndarray:
        """``[envs, features, actions]`` noise matrices for this step."""
        shape = (envs, *log_std.shape)
        if self._draws is None or self._draws.shape != shape or self._calls % self._period == 0:
            self._draws = rng.standard_normal(shape)
        self._calls += 1
        return np.exp(log_std.astype(np.float64)) * self._draws


def gsde_parts(package: PolicyPackage, outputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, features)`` of a gSDE package's outputs."""
    actions = package.head_log_std.shape[1]
    return outputs[..., :actions], outputs[..., actions:]


def _gsde_variance(package: PolicyPackage, features: np.ndarray) -> np.ndarray:
    std = np.exp(package.head_log_std.astype(np.float64))
    return np.square(features.astype(np.float64)) @ np.square(std) + GSDE_EPSILON


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
    if package.head == "gsde":
        mean, features = gsde_parts(package, outputs)
        variance = _gsde_variance(package, features)
        err = actions.astype(np.float64) - mean.astype(np.float64)
        return (-0.5 * err**2 / variance - 0.5 * np.log(variance)
                - 0.5 * _LOG_2PI).sum(axis=-1).astype(np.float32)
    raise ValueError(f"a {package.head!r} head has no log-probability")


def sample(package: PolicyPackage, outputs: np.ndarray, rng: np.random.Generator,
           noise: GsdeNoise | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(actions, log-probabilities)`` drawn from the head for each row of ``outputs``:
    int32 actions for a categorical head, float32 for a Gaussian or gSDE one (unbounded: the
    environment clips to its action range). A gSDE head needs ``noise`` (one row per
    environment)."""
    if package.head == "categorical":
        probs = np.exp(_log_softmax(outputs))
        u = rng.random((len(probs), 1))
        actions = np.minimum((np.cumsum(probs, axis=-1) < u).sum(axis=-1),
                             probs.shape[-1] - 1).astype(np.int32)
    elif package.head == "gaussian":
        std = np.exp(package.head_log_std.astype(np.float64))
        actions = (outputs + std * rng.standard_normal(outputs.shape)).astype(np.float32)
    elif package.head == "gsde":
        if noise is None:
            raise ValueError("a gsde head samples with its held noise (GsdeNoise)")
        mean, features = gsde_parts(package, outputs)
        matrices = noise.matrices(package.head_log_std, len(outputs), rng)
        actions = (mean + np.einsum("ki,kia->ka", features.astype(np.float64),
                                    matrices)).astype(np.float32)
    else:
        raise ValueError(f"a {package.head!r} head is not sampled from")
    return actions, log_prob(package, outputs, actions)


def mode(package: PolicyPackage, outputs: np.ndarray) -> np.ndarray:
    """The head's most likely action per row (evaluation): argmax of the logits, or the mean."""
    if package.head == "categorical":
        return np.argmax(outputs, axis=-1).astype(np.int32)
    if package.head == "gsde":
        return np.asarray(gsde_parts(package, outputs)[0], np.float32)
    return np.asarray(outputs, np.float32)
