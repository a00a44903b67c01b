"""Which JIT compilers a local pipeline update's JVM runs: C1 alone for little data, C2 too for a backlog.

Local Spark processes run C1 only (``-XX:TieredStopAtLevel=1``, local/spark.py): most live for
seconds to a minute on small data, and C2's compilations cost more CPU than they save. A large
backlog is the other way round: the decode and gold's window steps run over every record, and C1's
code is ~6x slower there than C2's (benchmarks/README.md, issue 36: 63,939 against 404,559
checkpoints decoded a second). So an update starts its JVM with both compilers when the records it
is about to read reach :data:`OPTIMISING_FROM_RECORDS` (local/backlog.py counts them), and
``OFFSETLAKE_JIT`` (``auto``, ``quick``, ``optimising``) overrides the choice.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from offsetlake.errors import InvalidValueError

JIT_ENV: Final = "OFFSETLAKE_JIT"
AUTO: Final = "auto"
OPTIMISING_FROM_RECORDS: Final = 250_000
"""Records to read at which C2 pays for itself (measured, benchmarks/README.md issue 36 seventh session)."""

# Without tiered compilation the JVM reserves 48 MB of code cache, which C1 fills in a long
# pipeline run ("CodeCache is full. Compiler has been disabled", then method-handle linking fails
# and the DAG scheduler dies: measured in the demo); the tiered default size is kept either way.
_COMMON_OPTIONS: Final = "-XX:+UseSerialGC -XX:ReservedCodeCacheSize=240m"


class Jit(StrEnum):
    QUICK = "quick"
    """C1 only: the least CPU before a method runs compiled."""
    OPTIMISING = "optimising"
    """C1, then C2 for what runs hot: slower to start, several times faster per record."""

    @property
    def jvm_options(self) -> str:
        """The JVM options of every local Spark process started with this choice."""
        if self is Jit.QUICK:
            return f"-XX:TieredStopAtLevel=1 {_COMMON_OPTIONS}"
        return _COMMON_OPTIONS


@dataclass(frozen=True)
class JitChoice:
    jit: Jit
    reason: str

    def describe(self) -> str:
        """One line for the update's output."""
        compilers = "C1 and C2" if self.jit is Jit.OPTIMISING else "C1 only"
        return f"JIT: {self.jit} ({compilers}): {self.reason}"


def choose_jit(
    backlog: Callable[[], int | None],
    setting: str | None = None,
    threshold: int = OPTIMISING_FROM_RECORDS,
) -> JitChoice:
    """The JIT for an update: ``setting`` (``$OFFSETLAKE_JIT`` when None) if it names one, else by
    ``backlog()``, the records the update will read (None: not known, which keeps C1 only).
    ``backlog`` is only called when the choice depends on it."""
    setting = (os.environ.get(JIT_ENV) if setting is None else setting) or AUTO
    if setting != AUTO:
        try:
            return JitChoice(Jit(setting), f"{JIT_ENV}={setting}")
        except ValueError:
            choices = ", ".join([AUTO, *Jit])
            raise InvalidValueError(f"{JIT_ENV}={setting!r}: expected one of {choices}") from None
    records = backlog()
    if records is None:
        return JitChoice(Jit.QUICK, "records to read not known")
    if records >= threshold:
        return JitChoice(Jit.OPTIMISING, f"{records:,} records to read (from {threshold:,})")
    return JitChoice(Jit.QUICK, f"{records:,} records to read (under {threshold:,})")
