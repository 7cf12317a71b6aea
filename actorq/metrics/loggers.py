"""Experiment loggers: JSONL, CSV, TensorBoard and terminal, plus a fan-out and a factory.

Every logger takes one flat mapping of scalars per :meth:`Logger.write` call. Files are
flushed on every write so that a Ctrl-C or a killed actor process loses at most the line
being written; :func:`read_jsonl` tolerates that torn final line.

Files are opened in append mode: restarting a run in the same ``run_dir`` continues its
logs instead of clobbering them.
"""

from __future__ import annotations

import csv
import json
import math
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self, TypeGuard, runtime_checkable

from absl import logging

Scalar = float | int | str | bool
LoggingData = Mapping[str, Any]

__all__ = [
    "CSVLogger",
    "JSONLLogger",
    "Logger",
    "LoggingData",
    "MultiLogger",
    "Scalar",
    "TensorBoardLogger",
    "TerminalLogger",
    "append_jsonl",
    "make_logger",
    "read_events",
    "read_jsonl",
    "read_resumes",
    "to_python_scalar",
]


@runtime_checkable
class Logger(Protocol):
    """Anything that accepts flat mappings of scalars and can be closed."""

    def write(self, values: Mapping[str, Scalar]) -> None:
        """Record one row of values."""
        ...

    def close(self) -> None:
        """Flush and release any resources; further writes are errors."""
        ...


def to_python_scalar(value: Any) -> Scalar | None:
    """Convert numpy/JAX scalars (and 0-d arrays) to plain Python scalars.

    Plain ``bool``/``int``/``float``/``str`` and ``None`` pass through unchanged. Anything else
    with an ``item()`` method and an empty shape is unwrapped; other objects raise ``TypeError``
    so that a stray array never ends up silently stringified in a log.
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    # numpy.generic, numpy 0-d arrays and jax.Array scalars all expose .item() and shape ().
    item = getattr(value, "item", None)
    if callable(item) and tuple(getattr(value, "shape", ())) == ():
        converted = item()
        if isinstance(converted, bool | int | float | str):
            return converted
    raise TypeError(f"Cannot log value of type {type(value).__name__}: {value!r}")


def _convert(values: Mapping[str, Any]) -> dict[str, Scalar | None]:
    return {str(key): to_python_scalar(value) for key, value in values.items()}


class _ContextLogger:
    """Mixin that makes a logger usable as a context manager (closes on exit)."""

    def close(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class JSONLLogger(_ContextLogger):
    """Writes one JSON object per line to ``path`` and flushes after every line."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Open ``path`` for appending, creating parent folders as needed."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # If a previous writer crashed mid-line, start on a fresh line so the torn
        # record stays isolated (read_jsonl skips it) instead of corrupting our first one.
        needs_newline = False
        if self.path.exists() and self.path.stat().st_size > 0:
            with self.path.open("rb") as f:
                f.seek(-1, os.SEEK_END)
                needs_newline = f.read(1) != b"\n"
        self._file = self.path.open("a", encoding="utf-8")
        if needs_newline:
            self._file.write("\n")
            self._file.flush()

    def write(self, values: Mapping[str, Scalar]) -> None:
        """Append ``values`` as one JSON line and flush it to the OS."""
        line = json.dumps(_convert(values), ensure_ascii=False)
        self._file.write(line + "\n")
        # flush (not fsync): survives Ctrl-C and process kills, which is what matters here,
        # without paying a disk sync per row.
        self._file.flush()

    def close(self) -> None:
        """Close the file (idempotent)."""
        if not self._file.closed:
            self._file.close()


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a JSONL log, skipping a torn line left behind by a crashed writer.

    A final line without its newline that fails to parse is dropped silently (the writer died
    mid-write). An unparseable line elsewhere (an earlier crash followed by a resumed run) is
    dropped with a warning. Blank lines are ignored.
    """
    text = Path(path).read_text(encoding="utf-8")
    lines = text.split("\n")
    rows: list[dict[str, Any]] = []
    last = len(lines) - 1
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if index != last:
                logging.warning("read_jsonl: skipping corrupt line %d of %s", index + 1, path)
            continue
        if not isinstance(row, dict):
            raise TypeError(f"{path}:{index + 1}: expected a JSON object, got {type(row)}")
        rows.append(row)
    return rows


# Files of a run directory written as JSON lines outside the node loggers.
EVENTS_FILE = "events.jsonl"  # supervision events: ready, restart, error, checkpoint_skipped, ...
RESUMES_FILE = "resumes.jsonl"  # one record per --resume: what changed, from which step


def append_jsonl(path: str | os.PathLike[str], row: Mapping[str, Any]) -> None:
    """Appends ``row`` (any JSON value inside: lists and dicts too, unlike :class:`JSONLLogger`)
    as one line to ``path``, after a newline if a crashed writer left the last line torn."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(dict(row), ensure_ascii=False, default=float)
    torn = False
    if path.exists() and path.stat().st_size > 0:
        with path.open("rb") as f:
            f.seek(-1, os.SEEK_END)
            torn = f.read(1) != b"\n"
    with path.open("a", encoding="utf-8") as f:
        f.write(("\n" if torn else "") + line + "\n")


def read_resumes(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The resume records of a run, oldest first; ``[]`` for a run never resumed.

    One per successful ``--resume``: ``time`` (unix), ``iso_time``, ``changed`` (dotted config
    key -> ``[old, new]``, only keys allowed to change on resume), ``added`` (keys the run's
    ``config.json`` lacks: fields added to the code since it started), ``actor_steps`` and
    ``learner_steps`` (where it resumed from: the restored checkpoint), ``checkpoint_step``
    (``None`` when the run had no checkpoint and restarted at 0), ``replay_size`` and
    ``skipped_checkpoints`` (the steps of newer, damaged checkpoints passed over).
    """
    path = Path(run_dir) / RESUMES_FILE
    return read_jsonl(path) if path.exists() else []


def read_events(run_dir: str | os.PathLike[str], event: str | None = None) -> list[dict[str, Any]]:
    """The rows of a run's ``events.jsonl`` (only those whose ``event`` is ``event`` if given);
    ``[]`` when it has none. ``read_events(run, "checkpoint_skipped")``: the damaged checkpoints
    a resume passed over (``step``, ``path``, ``reason``)."""
    path = Path(run_dir) / EVENTS_FILE
    rows = read_jsonl(path) if path.exists() else []
    return [r for r in rows if event is None or r.get("event") == event]


def surviving_rows(rows: Iterable[Mapping[str, Any]],
                   key: str = "actor_steps") -> list[dict[str, Any]]:
    """The rows of the timeline that a resumed run continued.

    A run killed after its last checkpoint has logged rows past it; resumed, it logs those steps
    again from the checkpoint's state. When ``key`` steps back, the earlier rows at or beyond that
    step belong to the lost branch and are dropped, so every step appears once, in order.
    """
    kept: list[dict[str, Any]] = []
    for row in rows:
        step = row[key]
        while kept and kept[-1][key] >= step:
            kept.pop()
        kept.append(dict(row))
    return kept


class CSVLogger(_ContextLogger):
    """Writes rows to a CSV file whose columns are the union of all keys seen.

    When a row brings a key not seen before, the whole file is rewritten with the widened
    header (earlier rows get empty cells). Logs are small, so correctness beats cleverness;
    the rewrite goes through a temporary file and ``os.replace`` so a crash never leaves a
    half-written CSV.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Open ``path``; an existing file's header is reused so resumed runs append."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fieldnames: list[str] = []
        if self.path.exists() and self.path.stat().st_size > 0:
            with self.path.open(newline="", encoding="utf-8") as f:
                self._fieldnames = list(next(csv.reader(f), []))
        self._file = self.path.open("a", newline="", encoding="utf-8")
        self._closed = False

    @property
    def fieldnames(self) -> tuple[str, ...]:
        """Current columns, in order of first appearance."""
        return tuple(self._fieldnames)

    def write(self, values: Mapping[str, Scalar]) -> None:
        """Append one row, widening the header (rewriting the file) on new keys."""
        if self._closed:
            raise ValueError(f"CSVLogger({self.path}) is closed")
        row = _convert(values)
        new_keys = [key for key in row if key not in self._fieldnames]
        if new_keys or not self._fieldnames:
            self._rewrite_with(self._fieldnames + new_keys)
        writer = csv.DictWriter(self._file, fieldnames=self._fieldnames, restval="")
        writer.writerow({key: "" if value is None else value for key, value in row.items()})
        self._file.flush()

    def _rewrite_with(self, fieldnames: list[str]) -> None:
        self._file.close()
        rows: list[dict[str, str]] = []
        if self._fieldnames and self.path.exists():
            with self.path.open(newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=fieldnames, restval="")
            writer.writeheader()
            for old in rows:
                writer.writerow({key: old.get(key) or "" for key in fieldnames})
        os.replace(tmp, self.path)
        self._fieldnames = fieldnames
        self._file = self.path.open("a", newline="", encoding="utf-8")

    def close(self) -> None:
        """Close the file (idempotent)."""
        self._closed = True
        if not self._file.closed:
            self._file.close()


def _is_number(value: object) -> TypeGuard[int | float]:
    # bool is an int subclass; a flag is not a curve worth plotting.
    return isinstance(value, int | float) and not isinstance(value, bool)


class TensorBoardLogger(_ContextLogger):
    """Writes numeric values as TensorBoard scalars via tensorboardX.

    The global step of each row is ``values[step_key]``; strings and booleans are skipped.
    Tags are the bare keys: give each logger its own ``logdir`` (``make_logger`` uses
    ``tb/{label}``) so TensorBoard overlays the same key across labels as separate runs.
    """

    def __init__(self, logdir: str | os.PathLike[str], step_key: str, flush_secs: int = 10) -> None:
        """Create the event writer in ``logdir`` (created if missing)."""
        from tensorboardX import SummaryWriter

        self.logdir = Path(logdir)
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.step_key = step_key
        self._writer = SummaryWriter(logdir=str(self.logdir), flush_secs=flush_secs)
        self._closed = False

    def write(self, values: Mapping[str, Scalar]) -> None:
        """Add every numeric value as a scalar at step ``values[step_key]``."""
        if self._closed:
            raise ValueError(f"TensorBoardLogger({self.logdir}) is closed")
        row = _convert(values)
        if self.step_key not in row:
            raise KeyError(
                f"TensorBoardLogger needs the step key {self.step_key!r} in every row; "
                f"got keys {sorted(row)}"
            )
        step = row[self.step_key]
        if not _is_number(step):
            raise ValueError(f"step {self.step_key!r} must be a number, got {step!r}")
        for key, value in row.items():
            if key == self.step_key or not _is_number(value):
                continue
            self._writer.add_scalar(key, value, global_step=int(step))

    def flush(self) -> None:
        """Force pending events to disk."""
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the event file (idempotent)."""
        if not self._closed:
            self._closed = True
            self._writer.close()


class TerminalLogger(_ContextLogger):
    """Logs a compact ``label: k=v k=v`` line via absl logging, at most every N seconds.

    The first row is always printed; later rows within ``every_seconds`` of the last printed
    one are dropped (they are still in the file loggers).
    """

    def __init__(self, label: str, every_seconds: float = 10.0) -> None:
        """``every_seconds <= 0`` prints every row."""
        self.label = label
        self.every_seconds = every_seconds
        self._last_print: float | None = None

    @staticmethod
    def _format(value: Scalar | None) -> str:
        if isinstance(value, float) and math.isfinite(value):
            return f"{value:.4g}"
        return str(value)

    def format(self, values: Mapping[str, Scalar]) -> str:
        """The line that :meth:`write` would print for ``values``."""
        body = " ".join(f"{key}={self._format(value)}" for key, value in _convert(values).items())
        return f"[{self.label}] {body}"

    def write(self, values: Mapping[str, Scalar]) -> None:
        """Print ``values`` if at least ``every_seconds`` passed since the last print."""
        now = time.monotonic()
        if self._last_print is not None and now - self._last_print < self.every_seconds:
            return
        self._last_print = now
        logging.info("%s", self.format(values))

    def close(self) -> None:
        """Nothing to release."""


class MultiLogger(_ContextLogger):
    """Fans every row out to several loggers."""

    def __init__(self, loggers: Iterable[Logger]) -> None:
        """Keep the loggers in order; rows reach them in that order."""
        self.loggers: tuple[Logger, ...] = tuple(loggers)

    def write(self, values: Mapping[str, Scalar]) -> None:
        """Write ``values`` to every logger."""
        for logger in self.loggers:
            logger.write(values)

    def close(self) -> None:
        """Close every logger, even if one fails; the first failure is re-raised."""
        first_error: BaseException | None = None
        for logger in self.loggers:
            try:
                logger.close()
            except Exception as error:  # noqa: BLE001 - close the rest, re-raise below
                first_error = first_error or error
        if first_error is not None:
            raise first_error


def make_logger(
    run_dir: str | os.PathLike[str],
    label: str,
    tensorboard: bool = True,
    *,
    step_key: str = "step",
    print_every_seconds: float | None = None,
) -> Logger:
    """The standard logger of a node: ``{label}.jsonl``, ``{label}.csv`` and ``tb/{label}/``.

    Args:
      run_dir: experiment folder (created if missing).
      label: node name, e.g. ``learner``, ``actor_0``, ``evaluator``.
      tensorboard: also write TensorBoard events under ``run_dir/tb/{label}``.
      step_key: key holding the x-axis for TensorBoard (required in every row when enabled).
      print_every_seconds: if set, also print a terminal line at most this often.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    loggers: list[Logger] = [
        JSONLLogger(run_dir / f"{label}.jsonl"),
        CSVLogger(run_dir / f"{label}.csv"),
    ]
    if tensorboard:
        loggers.append(TensorBoardLogger(run_dir / "tb" / label, step_key=step_key))
    if print_every_seconds is not None:
        loggers.append(TerminalLogger(label, print_every_seconds))
    return MultiLogger(loggers)
