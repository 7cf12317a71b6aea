"""Rate limiters with Reverb's semantics.

A rate limiter is an immutable config evaluated against a table's counters: ``size`` (items
present), ``num_inserts`` and ``num_samples`` (items sampled, all time). With
``diff = num_inserts * samples_per_insert - num_samples``:

* an insert of n items may proceed if ``size + n <= min_size_to_sample`` (inserts never block
  before the table is big enough to sample) or ``(num_inserts + n) * samples_per_insert -
  num_samples <= max_diff``;
* a sample of n items may proceed if ``size >= min_size_to_sample`` and
  ``diff - n >= min_diff``.

So the limiter blocks whichever side runs ahead and releases it once the other side catches up.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

_LOG = logging.getLogger(__name__)

class RateLimiter:
    """Reverb's general rate limiter; see the module docstring for the exact conditions."""

    def __init__(
        self,
        samples_per_insert: float,
        min_size_to_sample: int,
        min_diff: float,
        max_diff: float,
    ) -> None:
        spi = float(samples_per_insert)
        if not (math.isfinite(spi) and spi > 0):
            raise ValueError(f"samples_per_insert must be finite and > 0, got {spi}")
        if int(min_size_to_sample) != min_size_to_sample or min_size_to_sample < 1:
            raise ValueError(f"min_size_to_sample must be an int >= 1, got {min_size_to_sample}")
        if math.isnan(min_diff) or math.isnan(max_diff) or min_diff > max_diff:
            raise ValueError(f"need min_diff <= max_diff, got {min_diff} > {max_diff}")
        self._spi = spi
        self._min_size = int(min_size_to_sample)
        self._min_diff = float(min_diff)
        self._max_diff = float(max_diff)

    @property
    def samples_per_insert(self) -> float:
        """Target number of item samples per inserted item."""
        return self._spi

    @property
    def min_size_to_sample(self) -> int:
        """Samples block until the table holds at least this many items."""
        return self._min_size

    @property
    def min_diff(self) -> float:
        """Samples block when they would take ``diff`` below this."""
        return self._min_diff

    @property
    def max_diff(self) -> float:
        """Inserts (past ``min_size_to_sample``) block when they would take ``diff`` above this."""
        return self._max_diff

    def can_insert(self, size: int, num_inserts: int, num_samples: int, n: int = 1) -> bool:
        """Whether inserting n items now is within the limits."""
        if size + n <= self._min_size:
            return True
        return (num_inserts + n) * self._spi - num_samples <= self._max_diff

    def can_sample(self, size: int, num_inserts: int, num_samples: int, n: int = 1) -> bool:
        """Whether sampling n items now is within the limits."""
        if size < self._min_size:
            return False
        return num_inserts * self._spi - num_samples - n >= self._min_diff

    def max_insertable(self, size: int, num_inserts: int, num_samples: int, limit: int) -> int:
        """Largest n <= limit with ``can_insert(..., n)`` (0 if none)."""
        if self.can_insert(size, num_inserts, num_samples, limit):
            return limit
        n = max(0, self._min_size - size)
        if math.isfinite(self._max_diff):
            n = max(n, math.floor((self._max_diff + num_samples) / self._spi) - num_inserts)
        n = min(n, limit)
        # Correct for float rounding in the closed form.
        while n > 0 and not self.can_insert(size, num_inserts, num_samples, n):
            n -= 1
        while n < limit and self.can_insert(size, num_inserts, num_samples, n + 1):
            n += 1
        return n

    def max_sample_batch(self) -> float:
        """Largest batch a blocking ``sample`` can always eventually get (inf if unbounded).

        A blocked inserter means ``diff > max_diff - samples_per_insert``; a batch of b can then
        proceed iff ``diff - b >= min_diff``. Larger batches could leave both sides blocked.
        """
        if not (math.isfinite(self._max_diff) and math.isfinite(self._min_diff)):
            return math.inf
        span = self._max_diff - self._min_diff - self._spi
        if all(float(v).is_integer() for v in (self._spi, self._min_diff, self._max_diff)):
            # Integer diffs: "> max_diff - spi" means ">= max_diff - spi + 1".
            return span + 1
        return math.floor(span)

    def config(self) -> dict[str, Any]:
        """JSON-serialisable config; ``rate_limiter_from_config`` inverts it."""
        return {
            "type": "RateLimiter",
            "samples_per_insert": self._spi,
            "min_size_to_sample": self._min_size,
            "min_diff": _encode_float(self._min_diff),
            "max_diff": _encode_float(self._max_diff),
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RateLimiter) and self.config() == other.config()

    def __hash__(self) -> int:
        return hash(repr(self.config()))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items() if k != "type")
        return f"{type(self).__name__}({args})"


class MinSize(RateLimiter):
    """Samples block until the table holds ``min_size_to_sample`` items; inserts never block."""

    def __init__(self, min_size_to_sample: int) -> None:
        super().__init__(1.0, min_size_to_sample, -math.inf, math.inf)

    def config(self) -> dict[str, Any]:
        """``{"type": "MinSize", "min_size_to_sample": n}``."""
        return {"type": "MinSize", "min_size_to_sample": self.min_size_to_sample}


class Queue(RateLimiter):
    """Reverb's ``Queue(size)``: each item is sampled once, inserts block while ``size`` items
    wait, samples block while none does. With a FIFO sampler and ``max_times_sampled=1`` it
    makes a table a queue (:func:`actorq.replay.table.queue_table`)."""

    def __init__(self, size: int) -> None:
        if int(size) != size or size < 1:
            raise ValueError(f"a queue's size must be an int >= 1, got {size}")
        super().__init__(1.0, 1, 0.0, float(size))

    @property
    def size(self) -> int:
        """Items the queue holds before inserts block."""
        return int(self.max_diff)

    def config(self) -> dict[str, Any]:
        """``{"type": "Queue", "size": n}``."""
        return {"type": "Queue", "size": self.size}


class SampleToInsertRatio(RateLimiter):
    """Keeps the average number of samples per inserted item near ``samples_per_insert``.

    As in Reverb: ``offset = samples_per_insert * min_size_to_sample``; with a number
    ``error_buffer``, ``min_diff = offset - error_buffer`` and ``max_diff = offset +
    error_buffer``; with a pair it is ``(min_diff, max_diff)`` directly. The range must be at least
    ``2 * max(1, samples_per_insert)`` wide, or inserts and samples could block each other forever.
    """

    def __init__(
        self,
        samples_per_insert: float,
        min_size_to_sample: int,
        error_buffer: float | tuple[float, float],
    ) -> None:
        if isinstance(error_buffer, (tuple, list)):
            min_diff, max_diff = (float(v) for v in error_buffer)
        else:
            eb = float(error_buffer)
            if not (math.isfinite(eb) and eb >= 0):
                raise ValueError(f"error_buffer must be finite and >= 0, got {error_buffer}")
            offset = float(samples_per_insert) * min_size_to_sample
            min_diff, max_diff = offset - eb, offset + eb
        offset = float(samples_per_insert) * min_size_to_sample
        if min_diff > offset:
            raise ValueError(
                f"error_buffer range [{min_diff}, {max_diff}] lies above samples_per_insert * "
                f"min_size_to_sample = {offset}: sampling would deadlock once min_size_to_sample "
                "items are inserted"
            )
        if max_diff < offset:
            _LOG.warning(
                "SampleToInsertRatio: max_diff %s < samples_per_insert * min_size_to_sample %s; "
                "inserts will block at min_size_to_sample unless sampling runs concurrently",
                max_diff, offset,
            )
        if max_diff - min_diff < 2 * max(1.0, float(samples_per_insert)):
            raise ValueError(
                "error_buffer is too small: max_diff - min_diff must be >= "
                f"2 * max(1, samples_per_insert) = {2 * max(1.0, float(samples_per_insert))}, "
                f"got {max_diff - min_diff}; smaller values can block inserts and samples forever"
            )
        super().__init__(samples_per_insert, min_size_to_sample, min_diff, max_diff)
        self._error_buffer = (
            (min_diff, max_diff) if isinstance(error_buffer, (tuple, list)) else float(error_buffer)
        )

    @property
    def error_buffer(self) -> float | tuple[float, float]:
        """As given (a number, or the explicit (min_diff, max_diff) pair)."""
        return self._error_buffer

    def config(self) -> dict[str, Any]:
        """``{"type": "SampleToInsertRatio", samples_per_insert, min_size_to_sample,
        error_buffer}``."""
        eb = self._error_buffer
        return {
            "type": "SampleToInsertRatio",
            "samples_per_insert": self.samples_per_insert,
            "min_size_to_sample": self.min_size_to_sample,
            "error_buffer": list(eb) if isinstance(eb, tuple) else eb,
        }


def _encode_float(x: float) -> float | str:
    # Strict JSON has no Infinity literal.
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def rate_limiter_from_config(config: Mapping[str, Any]) -> RateLimiter:
    """Rebuilds a rate limiter from ``RateLimiter.config()``."""
    kind = config.get("type")
    if kind == "MinSize":
        return MinSize(int(config["min_size_to_sample"]))
    if kind == "Queue":
        return Queue(int(config["size"]))
    if kind == "SampleToInsertRatio":
        eb = config["error_buffer"]
        return SampleToInsertRatio(
            float(config["samples_per_insert"]),
            int(config["min_size_to_sample"]),
            (float(eb[0]), float(eb[1])) if isinstance(eb, list) else float(eb),
        )
    if kind == "RateLimiter":
        return RateLimiter(
            float(config["samples_per_insert"]),
            int(config["min_size_to_sample"]),
            float(config["min_diff"]),
            float(config["max_diff"]),
        )
    raise ValueError(f"unknown rate limiter config {dict(config)!r}")
