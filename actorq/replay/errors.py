"""Exceptions raised by replay tables."""

from __future__ import annotations

from collections.abc import Sequence


class RateLimiterTimeout(TimeoutError):
    """A blocked insert or sample did not get past the rate limiter within its timeout.

    For ``Table.insert_batch`` the items admitted before the timeout stay in the table (rate
    limiting is applied per item, as in Reverb); their keys are in ``inserted_keys``.
    """

    def __init__(self, message: str, inserted_keys: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.inserted_keys: list[int] = list(inserted_keys)


class TableClosedError(RuntimeError):
    """The table was closed; blocked and future inserts/samples fail with this error."""

    def __init__(self, message: str, inserted_keys: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.inserted_keys: list[int] = list(inserted_keys)
