"""A thin tqdm progress bar for training loops (steps done, steps/s, current return)."""

from __future__ import annotations

from types import TracebackType
from typing import Self, TextIO

from tqdm import tqdm

__all__ = ["Progress"]


class Progress:
    """Progress bar over ``total`` units with a free-form postfix.

    Example::

        with Progress(total=40_000, description="walker_stand int8") as bar:
            for ...:
                bar.update(1_000, episode_return=812.3, version=7)
    """

    def __init__(
        self,
        total: int,
        description: str,
        unit: str = "step",
        disable: bool | None = None,
        *,
        file: TextIO | None = None,
        mininterval: float = 0.5,
    ) -> None:
        """Create the bar.

        Args:
          total: number of units expected.
          description: text shown before the bar.
          unit: unit name shown in the rate (``step/s``).
          disable: ``True`` hides the bar; ``None`` (tqdm's convention) hides it when the output
            is not a terminal, so batch jobs and log files stay clean.
          file: stream to draw on (default: stderr).
          mininterval: minimum seconds between redraws.
        """
        if total < 0:
            raise ValueError(f"total must be >= 0, got {total}")
        self._bar = tqdm(
            total=total,
            desc=description,
            unit=unit,
            disable=disable,
            file=file,
            mininterval=mininterval,
            dynamic_ncols=True,
        )
        self._file = file
        self._n = 0

    @property
    def n(self) -> int:
        """Units completed so far (counted even when the bar is disabled)."""
        return self._n

    @property
    def total(self) -> int:
        """Units expected."""
        return int(self._bar.total or 0)

    def update(self, n: int = 1, **postfix: object) -> None:
        """Advance by ``n`` units and show ``postfix`` (e.g. ``episode_return=812.3``)."""
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        self._n += n
        if postfix:
            # refresh=False: the update below redraws (rate-limited by mininterval).
            self._bar.set_postfix(postfix, refresh=False)
        self._bar.update(n)

    def write(self, message: str) -> None:
        """Print a line above the bar without breaking it."""
        tqdm.write(message, file=self._file)

    def close(self) -> None:
        """Finish the bar (idempotent)."""
        self._bar.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
