"""The one exception family: every error offsetlake raises on purpose is an ``OffsetlakeError``.

Two branches decide what an operator sees and the exit status:

- ``UsageError`` (exit 2): the operator's to fix (a bad flag or setting, no local clusters). One line,
  no traceback.
- ``ExternalError`` (exit 1): the world failed (a cluster unreachable, a table missing, a record
  that does not decode). One line naming the command, no traceback.

Anything else that escapes is a bug: the command line prints its traceback and exits 1. Classes
that were ``ValueError`` before keep it as a second base, so ``except ValueError`` still holds.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import ClassVar, Self


class OffsetlakeError(Exception):
    """Base of every deliberate offsetlake error."""

    exit_code: ClassVar[int] = 1

    def rewritten(self, rewrite: Callable[[str], str]) -> Self:
        """The same error with its message passed through ``rewrite`` (e.g. masking secrets)."""
        clone = copy.copy(self)
        clone.args = (rewrite(str(self)),)
        return clone


class UsageError(OffsetlakeError):
    """The operator asked for something that cannot work as given; the message says how to fix it."""

    exit_code: ClassVar[int] = 2


class InvalidValueError(UsageError, ValueError):
    """A flag, setting or option value that cannot be used (a bad regex, an unknown choice)."""


class ExternalError(OffsetlakeError):
    """Something outside offsetlake failed or holds data it cannot use."""

    exit_code: ClassVar[int] = 1


class StopSignalError(OffsetlakeError):
    """The process was asked to stop (SIGINT, SIGTERM); raised so cleanups run. Exit 128 + signal."""

    def __init__(self, signum: int) -> None:
        import signal

        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum

    def __reduce__(self) -> tuple[object, ...]:
        # Rebuilt from the signal number (copy, pickle), not from the message it may have gained.
        return (type(self), (self.signum,), self.__dict__)

    @property
    def exit_code(self) -> int:  # type: ignore[override]
        return 128 + self.signum
