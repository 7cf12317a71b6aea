"""Per-actor runtime breakdown, as reported in the QuaRL/ActorQ paper.

Each actor accumulates wall time in six sections: policy ``inference``, ``env`` stepping,
weight ``pull`` (fetching the published policy), ``deserialize`` (unpacking the buffer),
``load`` (installing the weights into the policy) and ``blocked`` (waiting for the replay's rate
limiter to admit more experience), plus bytes pulled and env steps taken.

    breakdown = RuntimeBreakdown()
    with breakdown.time("inference"):
        action = policy(observation)
    ...
    logger.write(breakdown.summary())            # flat dict: loggable as is
    queue.put(breakdown.to_dict())               # plain Python types, any IPC
    print(markdown_table({"actor_0": RuntimeBreakdown.from_dict(d).summary()}))
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Final

__all__ = ["SECTIONS", "RuntimeBreakdown", "markdown_table"]

SECTIONS: Final[tuple[str, ...]] = ("inference", "env", "pull", "deserialize", "load", "blocked")

_SECTION_SET: Final[frozenset[str]] = frozenset(SECTIONS)


def _check_section(section: str) -> None:
    if section not in _SECTION_SET:
        raise ValueError(f"Unknown section {section!r}; expected one of {SECTIONS}")


class _SectionTimer:
    """Context manager adding the elapsed time of its block to one section.

    A small object per block (rather than a generator-based contextmanager) keeps the overhead
    well under a microsecond: actors time every inference and env step.
    """

    __slots__ = ("_breakdown", "_section", "_start")

    def __init__(self, breakdown: RuntimeBreakdown, section: str) -> None:
        self._breakdown = breakdown
        self._section = section
        self._start = 0.0

    def __enter__(self) -> None:
        self._start = self._breakdown.clock()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Count the time even if the block raised: it was spent.
        self._breakdown.add(self._section, self._breakdown.clock() - self._start)


class RuntimeBreakdown:
    """Accumulates time per section, bytes pulled and env steps for one actor.

    Wall time runs from creation (or :meth:`reset`) and sets ``env_steps_per_s``. Breakdowns
    rebuilt by :meth:`from_dict` or produced by :meth:`merge` are snapshots: their wall time is
    frozen at the recorded value, so a summary computed later in another process is unchanged.

    Not thread-safe: one breakdown per actor loop.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        """Start an empty breakdown; the wall clock starts now. ``clock`` (seconds) is
        injectable so that tests can drive time."""
        self.clock = clock
        self._clear()

    def _clear(self) -> None:
        self._seconds: dict[str, float] = dict.fromkeys(SECTIONS, 0.0)
        self._calls: dict[str, int] = dict.fromkeys(SECTIONS, 0)
        self._bytes_pulled = 0
        self._env_steps = 0
        self._start = self.clock()
        self._frozen_wall_s: float | None = None

    # Recording.

    def time(self, section: str) -> _SectionTimer:
        """``with breakdown.time('inference'): ...`` adds the block's duration and one call."""
        _check_section(section)
        return _SectionTimer(self, section)

    def add(self, section: str, seconds: float, calls: int = 1) -> None:
        """Add time measured elsewhere (e.g. inside another process) to ``section``."""
        _check_section(section)
        if seconds < 0 or calls < 0:
            raise ValueError(f"seconds and calls must be >= 0, got {seconds}, {calls}")
        self._seconds[section] += seconds
        self._calls[section] += calls

    def add_bytes_pulled(self, n: int) -> None:
        """Record ``n`` bytes of policy weights received."""
        if n < 0:
            raise ValueError(f"bytes pulled must be >= 0, got {n}")
        self._bytes_pulled += int(n)

    def add_env_steps(self, n: int) -> None:
        """Record ``n`` environment steps taken."""
        if n < 0:
            raise ValueError(f"env steps must be >= 0, got {n}")
        self._env_steps += int(n)

    def reset(self) -> None:
        """Zero every counter and restart the wall clock (unfreezes a snapshot)."""
        self._clear()

    # Reading.

    @property
    def wall_s(self) -> float:
        """Seconds since creation or reset (frozen for snapshots)."""
        if self._frozen_wall_s is not None:
            return self._frozen_wall_s
        return self.clock() - self._start

    @property
    def bytes_pulled(self) -> int:
        """Total bytes pulled."""
        return self._bytes_pulled

    @property
    def env_steps(self) -> int:
        """Total env steps."""
        return self._env_steps

    def seconds(self, section: str) -> float:
        """Total seconds spent in ``section``."""
        _check_section(section)
        return self._seconds[section]

    def calls(self, section: str) -> int:
        """Number of timed blocks in ``section``."""
        _check_section(section)
        return self._calls[section]

    def summary(self) -> dict[str, float | int]:
        """Flat dict, directly loggable.

        Keys, per section ``s``: ``{s}_s`` (total seconds), ``{s}_fraction`` (of the timed
        total; fractions sum to 1 when anything was timed), ``{s}_calls``, ``{s}_mean_ms``
        (per call). Plus ``timed_s`` (sum over sections), ``wall_s``, ``bytes_pulled``,
        ``env_steps`` and ``env_steps_per_s`` (env steps over wall time).
        """
        timed = sum(self._seconds.values())
        out: dict[str, float | int] = {}
        for section in SECTIONS:
            seconds = self._seconds[section]
            calls = self._calls[section]
            out[f"{section}_s"] = seconds
            out[f"{section}_fraction"] = seconds / timed if timed > 0 else 0.0
            out[f"{section}_calls"] = calls
            out[f"{section}_mean_ms"] = 1000.0 * seconds / calls if calls else 0.0
        wall = self.wall_s
        out["timed_s"] = timed
        out["wall_s"] = wall
        out["bytes_pulled"] = self._bytes_pulled
        out["env_steps"] = self._env_steps
        out["env_steps_per_s"] = self._env_steps / wall if wall > 0 else 0.0
        return out

    # Combining and shipping.

    def merge(self, other: RuntimeBreakdown, concurrent: bool = True) -> RuntimeBreakdown:
        """A new snapshot summing both breakdowns; neither input changes.

        Args:
          other: breakdown to add.
          concurrent: ``True`` (actors running side by side) takes the max of the wall times,
            so ``env_steps_per_s`` is the aggregate throughput; ``False`` (consecutive periods
            of one actor) sums them.
        """
        merged = RuntimeBreakdown()
        for section in SECTIONS:
            merged._seconds[section] = self._seconds[section] + other._seconds[section]
            merged._calls[section] = self._calls[section] + other._calls[section]
        merged._bytes_pulled = self._bytes_pulled + other._bytes_pulled
        merged._env_steps = self._env_steps + other._env_steps
        walls = (self.wall_s, other.wall_s)
        merged._frozen_wall_s = max(walls) if concurrent else sum(walls)
        return merged

    def to_dict(self) -> dict[str, Any]:
        """Plain Python types (JSON/msgpack/queue-safe); wall time is captured now."""
        return {
            "seconds": dict(self._seconds),
            "calls": dict(self._calls),
            "bytes_pulled": self._bytes_pulled,
            "env_steps": self._env_steps,
            "wall_s": self.wall_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuntimeBreakdown:
        """Rebuild a (wall-frozen) snapshot from :meth:`to_dict` output.

        Sections missing from ``data`` count as zero; unknown sections raise ``ValueError``.
        """
        breakdown = cls()
        for key in ("seconds", "calls"):
            for section in data.get(key, {}):
                _check_section(section)
        for section, seconds in data.get("seconds", {}).items():
            breakdown._seconds[section] = float(seconds)
        for section, calls in data.get("calls", {}).items():
            breakdown._calls[section] = int(calls)
        breakdown._bytes_pulled = int(data.get("bytes_pulled", 0))
        breakdown._env_steps = int(data.get("env_steps", 0))
        breakdown._frozen_wall_s = float(data.get("wall_s", 0.0))
        return breakdown

    def __repr__(self) -> str:
        parts = ", ".join(f"{s}={self._seconds[s]:.3f}s" for s in SECTIONS)
        return f"RuntimeBreakdown({parts}, env_steps={self._env_steps})"


def _format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def markdown_table(
    breakdowns: Mapping[str, Mapping[str, Any] | RuntimeBreakdown],
) -> str:
    """Per-actor Markdown table: one row per actor, one column per section (seconds and %).

    Args:
      breakdowns: actor name -> :meth:`RuntimeBreakdown.summary` dict (a ``RuntimeBreakdown``
        is accepted too and summarised).

    Columns: actor, its policy precision (when the summaries carry one), each section as
    ``seconds (percent of timed total)``, bytes pulled and env steps per second.
    """
    summaries = {actor: entry.summary() if isinstance(entry, RuntimeBreakdown) else entry
                 for actor, entry in breakdowns.items()}
    with_precision = any("precision" in summary for summary in summaries.values())
    header = ["actor", *(["precision"] if with_precision else []),
              *(f"{s} s (%)" for s in SECTIONS), "bytes pulled", "env steps/s"]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---", *(["---:"] * (len(header) - 1))]) + "|",
    ]
    for actor, summary in summaries.items():
        cells = [str(actor)]
        if with_precision:
            cells.append(str(summary.get("precision", "")))
        for section in SECTIONS:
            seconds = float(summary.get(f"{section}_s", 0.0))
            fraction = float(summary.get(f"{section}_fraction", 0.0))
            cells.append(f"{seconds:.3f} ({100.0 * fraction:.1f}%)")
        cells.append(_format_bytes(float(summary.get("bytes_pulled", 0))))
        cells.append(f"{float(summary.get('env_steps_per_s', 0.0)):.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
