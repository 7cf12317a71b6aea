"""Bad input ends in one line: ``error: <what is wrong>`` and a non-zero exit, no traceback.

Every entry point (``experiments.*``, ``benchmarks.*``) parses its flags with one of the parsers
here and validates its flags and config inside :func:`bad_input` before doing any work. Errors
after that point are bugs or failures of the run and keep their tracebacks.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import NoReturn

from actorq.bounds import Bounds, check_bounds

# What validation raises for input a user can fix (absl's UsageError is an Exception subclass
# with its own exit code; OSError covers missing, unwritable and existing paths).
BAD_INPUT_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, OSError, ImportError)


def one_line(message: object) -> str:
    """The message on one line: a traceback quoted inside a message (ml_collections puts the
    config file's traceback into its flag error) is cut to its last line, the error itself."""
    text = str(message).strip()
    if "Traceback (most recent call last)" in text:
        head = text.split("Traceback (most recent call last)")[0].strip().rstrip(":")
        last = [line.strip() for line in text.splitlines() if line.strip()][-1]
        text = f"{head}: {last}" if head else last
    return " ".join(text.split())


class Interrupted(RuntimeError):
    """Work the user stopped (Ctrl-C, SIGTERM) that the same command resumes: the entry point
    ends with one line saying so, and exit status 1, instead of a traceback."""


def fail(message: object) -> NoReturn:
    """Prints ``error: <message>`` on one line to stderr and exits with status 2."""
    print(f"error: {one_line(message)}", file=sys.stderr, flush=True)
    raise SystemExit(2)


@contextlib.contextmanager
def bad_input() -> Iterator[None]:
    """Validation block: a ValueError/TypeError/OSError/ImportError (or absl's UsageError)
    raised inside ends the program with one ``error:`` line."""
    from absl import app

    try:
        yield
    except (*BAD_INPUT_ERRORS, app.UsageError) as error:
        fail(error)


def parse_absl_flags(argv: Sequence[str]) -> list[str]:
    """``absl.app.run``'s ``flags_parser``: unknown flags, bad values and configs that fail to
    load end in one ``error:`` line (absl's own parser prints two and exits 1)."""
    from absl import flags

    try:
        return flags.FLAGS(list(argv))
    except flags.Error as error:
        fail(error)
    except (AttributeError, KeyError) as error:  # ml_collections: --config.<no such field>
        fields = [a.split("=")[0] for a in argv[1:] if a.startswith("--config.")]
        fail(f"unknown config field {error} (in {' '.join(fields)})")


def run_absl(main) -> None:
    """``absl.app.run(main)`` with one-line flag errors and a one-line :class:`Interrupted`."""
    from absl import app

    def guarded(argv: list[str]) -> None:
        try:
            main(argv)
        except Interrupted as stop:
            print(f"stopped: {stop}", file=sys.stderr, flush=True)
            raise SystemExit(1) from None

    app.run(guarded, flags_parser=parse_absl_flags)


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors are one ``error:`` line (no usage block)."""

    def error(self, message: str) -> NoReturn:
        fail(message)


def check_writable_dir(path: str | Path, flag: str) -> Path:
    """Checks that directory ``path`` exists or can be created, and can be written, without
    leaving anything behind; raises OSError naming ``flag`` otherwise."""
    target = Path(path).absolute()
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(f"{flag} {path} exists and is not a directory")
    ancestor = target
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise NotADirectoryError(f"{flag} {path}: {ancestor} is not a directory")
    try:  # access() says yes to root everywhere; only a real write tells (/proc, read-only fs)
        probe = tempfile.mkdtemp(prefix=".actorq_write_check_", dir=ancestor)
    except OSError as error:
        raise PermissionError(f"{flag} {path} cannot be created or written "
                              f"({ancestor}: {error.strerror or error})") from None
    shutil.rmtree(probe, ignore_errors=True)
    return target


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace,
               table: Mapping[str, Bounds]) -> None:
    """Checks parsed argparse values against their bounds; ``parser.error`` (one line with
    :class:`ArgumentParser`) names every value out of range."""
    try:
        check_bounds(vars(args), table, prefix="--")
    except ValueError as error:
        parser.error(str(error))


def check_choices(parser: argparse.ArgumentParser, task: str | None = None,
                  quantizers: Sequence[str] = (), runtimes: Sequence[str] = ()) -> None:
    """Unknown task, quantizer or runtime names end in one line naming the valid ones."""
    from actorq.envs import task_family
    from actorq.quantization import make_quantizer
    from actorq.runtime.policy_runtime import make_policy_runtime

    try:
        if task is not None:
            task_family(task)
        for name in quantizers:
            make_quantizer(name)
        for name in runtimes:
            make_policy_runtime(name)
    except ValueError as error:
        parser.error(str(error))


def parse_ints(values: str | Sequence[str | int], name: str, unique: bool = True) -> list[int]:
    """A list flag (``--seeds=0,1,2``) as ``[0, 1, 2]``; ValueError naming the flag for an empty
    list, a non-integer or (with ``unique``) a duplicate."""
    items = values.split(",") if isinstance(values, str) else list(values)
    out: list[int] = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        try:
            out.append(int(text))
        except ValueError:
            raise ValueError(f"--{name}: {text!r} is not an integer") from None
    if not out:
        raise ValueError(f"--{name} is empty")
    if unique and len(set(out)) != len(out):
        raise ValueError(f"--{name} has duplicates: {out}")
    return out
