"""Replay: Reverb-style tables (samplers, removers, rate limiters), n-step adders, prefetching."""

from actorq.replay.adders import NStepTransitionAdder, UnrollAdder
from actorq.replay.admission import AdmissionQueue
from actorq.replay.dataset import PrefetchingIterator
from actorq.replay.errors import RateLimiterTimeout, TableClosedError
from actorq.replay.rate_limiters import (
    MinSize,
    Queue,
    RateLimiter,
    SampleToInsertRatio,
    rate_limiter_from_config,
)
from actorq.replay.samplers import (
    Fifo,
    Prioritized,
    Sampler,
    Selector,
    Uniform,
    importance_weights,
    sampler_from_config,
)
from actorq.replay.specs import ArraySpec, signature_from_example
from actorq.replay.sum_tree import SumTree
from actorq.replay.table import SampleBatch, Table, queue_table

__all__ = [
    "AdmissionQueue",
    "ArraySpec",
    "Fifo",
    "MinSize",
    "NStepTransitionAdder",
    "Queue",
    "PrefetchingIterator",
    "Prioritized",
    "RateLimiter",
    "RateLimiterTimeout",
    "SampleBatch",
    "SampleToInsertRatio",
    "Sampler",
    "Selector",
    "SumTree",
    "Table",
    "TableClosedError",
    "Uniform",
    "UnrollAdder",
    "importance_weights",
    "queue_table",
    "rate_limiter_from_config",
    "sampler_from_config",
    "signature_from_example",
]
