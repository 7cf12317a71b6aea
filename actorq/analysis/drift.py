"""How far the actors' quantized policy is from the learner's fp32 policy, as training runs.

For every published version the learner side evaluates both on one fixed batch of replay
observations: greedy disagreement and KL (softmax of the Q-values, T=1) for discrete policies,
mean L2 distance between actions for continuous ones. Off-policy learners need no importance
correction for the gap, but n-step targets from a drifted behaviour policy are biased, so it is
logged next to ``sample_policy_lag``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from actorq.analysis.ptq import action_agreement, action_distances, kl_divergence
from actorq.quantization.package import PolicyPackage
from actorq.quantization.reference import forward, package_arrays, package_geometry

# One compilation per package structure: new versions of the same network reuse it.
_package_forward = jax.jit(forward, static_argnames=(
    "activation", "output_activation", "activation_bits", "unsigned_activations", "geometry",
    "input_scale"))


def package_outputs(package: PolicyPackage, observations: np.ndarray) -> np.ndarray:
    """The reference outputs of ``package`` on raw ``observations`` (what every actor runtime
    computes: the package's normalizer, if any, applies first)."""
    return np.asarray(_package_forward(
        package_arrays(package), package.prepare(observations),
        activation=package.activation, output_activation=package.output_activation,
        activation_bits=package.activation_bits,
        unsigned_activations=package.unsigned_activations,
        geometry=package_geometry(package), input_scale=package.input_scale))


def drift_metrics(evaluation_action: Callable[[np.ndarray], np.ndarray],
                  fp32_outputs: np.ndarray, outputs: np.ndarray) -> dict[str, float]:
    """Disagreement and KL (discrete actions) or mean action distance (continuous)."""
    reference_actions = np.asarray(evaluation_action(fp32_outputs))
    actions = np.asarray(evaluation_action(outputs))
    if np.issubdtype(reference_actions.dtype, np.integer):
        return {
            "disagreement": 1.0 - action_agreement(reference_actions, actions),
            "kl": float(np.mean(kl_divergence(fp32_outputs, outputs))),
        }
    return {"action_distance": action_distances(reference_actions, actions)[0]}


class PolicyDrift:
    """Measures packages against the fp32 policy on one fixed batch of observations.

    Args:
      network: the policy network the packages quantize (``builder.policy_network``).
      evaluation_action: the agent's noise-free action from network outputs.
      observations: the fixed batch ``[n, obs]`` (e.g. ``Table.peek`` once replay is warm).
    """

    def __init__(self, network: Any, evaluation_action: Callable[[np.ndarray], np.ndarray],
                 observations: np.ndarray) -> None:
        self._apply = jax.jit(network.apply)
        self._evaluation_action = evaluation_action
        self._observations = np.asarray(observations)

    def measure(self, params: Any, packages: dict[str, PolicyPackage]) -> dict[str, float]:
        """``{f"policy_drift_{metric}/{precision}": value}`` for every package (an fp32 package
        measures ~0: the same function computed by the reference instead of Flax)."""
        out: dict[str, float] = {}
        for precision, package in packages.items():
            # The network sees what it was trained on: the package's normalizer (or pixel
            # codes), without the input smoothing folded into the package's first kernel.
            fp32 = np.asarray(self._apply(params, package.network_input(self._observations)))
            metrics = drift_metrics(self._evaluation_action, fp32,
                                    package_outputs(package, self._observations))
            out.update({f"policy_drift_{name}/{precision}": value
                        for name, value in metrics.items()})
        return out
