"""Where a run's time went, by phase: ``PhaseTimes`` (the value results carry) and ``PhaseClock``
(what the code running each phase fills it with, on ``time.monotonic``).

The failover and the apply print one line of it, so a slow run says which part was slow (issue 36:
a healthy failover in under a minute is measured by phase, not guessed)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

PHASES: Final = (
    "probe", "refresh", "gold", "tail", "source", "k2k", "target", "plan", "apply+verify", "audit",
)  # fmt: skip
"""Every phase, in the order a failover runs them (the apply's are from ``gold`` on)."""


@dataclass(frozen=True)
class PhaseTimes:
    """(phase, seconds) in ``PHASES`` order; seconds None: the phase is part of this kind of run
    but was skipped this time (printed ``-``). A phase a run never has (``k2k`` without the
    search) is absent."""

    phases: tuple[tuple[str, float | None], ...] = ()

    def __add__(self, other: PhaseTimes) -> PhaseTimes:
        """Both runs' phases; a phase in both is the sum of what ran."""
        seconds: dict[str, float | None] = dict(self.phases)
        for name, more in other.phases:
            seconds[name] = _sum(seconds.get(name), more) if name in seconds else more
        return _ordered(seconds.items())

    @property
    def total(self) -> float:
        return sum(seconds for _, seconds in self.phases if seconds is not None)


def _ordered(phases: Iterable[tuple[str, float | None]]) -> PhaseTimes:
    return PhaseTimes(tuple(sorted(phases, key=lambda phase: PHASES.index(phase[0]))))


def _sum(one: float | None, other: float | None) -> float | None:
    return None if one is None and other is None else (one or 0.0) + (other or 0.0)


class PhaseClock:
    """Times phases as the code runs them (``with clock.phase("gold"): ...``); a phase timed twice
    (gold read before and after the tail) adds up."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._seconds: dict[str, float | None] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if name not in PHASES:
            raise ValueError(f"unknown phase {name!r}: one of {', '.join(PHASES)}")
        start = self._clock()
        yield
        self._seconds[name] = (self._seconds.get(name) or 0.0) + self._clock() - start

    def times(self, expected: Iterable[str] = ()) -> PhaseTimes:
        """The phases timed, and the ``expected`` ones that did not run as skipped."""
        skipped = [(name, None) for name in expected if name not in self._seconds]
        return _ordered([*self._seconds.items(), *skipped])
