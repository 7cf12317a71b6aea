"""Running mean and variance of observations, kept by the learner and shipped in the package.

A pure pytree with a parallel (Chan et al.) merge of each batch's moments, the same update as
gymnasium's ``RunningMeanStd`` but inside the learner's jitted update and its checkpoints.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from actorq.quantization.package import OBSERVATION_CLIP as CLIP

EPSILON = 1e-8


class RunningMoments(NamedTuple):
    mean: jax.Array
    var: jax.Array
    count: jax.Array


def init_moments(size: int) -> RunningMoments:
    return RunningMoments(jnp.zeros(size, jnp.float32), jnp.ones(size, jnp.float32),
                          jnp.asarray(EPSILON, jnp.float32))


def update_moments(moments: RunningMoments, batch: jax.Array) -> RunningMoments:
    """Merges the moments of ``batch`` (``[..., size]``) into ``moments``."""
    x = batch.reshape(-1, batch.shape[-1]).astype(jnp.float32)
    n = jnp.asarray(x.shape[0], jnp.float32)
    mean, var = jnp.mean(x, axis=0), jnp.var(x, axis=0)
    delta = mean - moments.mean
    total = moments.count + n
    new_mean = moments.mean + delta * n / total
    m2 = moments.var * moments.count + var * n + delta**2 * moments.count * n / total
    return RunningMoments(new_mean, m2 / total, total)


def std(moments: RunningMoments) -> jax.Array:
    return jnp.sqrt(moments.var + EPSILON)


def normalize(moments: RunningMoments, observations: jax.Array) -> jax.Array:
    """``clip((x - mean) / std, +-CLIP)``."""
    return jnp.clip((observations - moments.mean) / std(moments), -CLIP, CLIP)
