"""Which translation of a group-partition wins, written once for the pipeline and the apply.

Pure: the rule's methods, their precedence parser and :func:`choose`, the twin of
offsetlake.pipeline.precedence_spark.choose_translation (its Spark form, which gold uses).

Several methods (checkpoint, offset_sync, mapping) may translate the same group-partition, and
precedence alone could let a stale method win, so freshness comes first:

1. the *freshest upstream offset* is the upstream_offset of the most recently observed method;
2. among the methods translating exactly that upstream offset, the first in the precedence wins;
3. ``_disagree`` is true when those same-upstream methods give different downstream offsets.

``latest_offsets`` applies it to each method's current translation (freshness: last observation);
``offsetlake plan|apply --as-of T`` applies it to the history rows valid at T (freshness:
valid_from), so a restore picks what latest_offsets would have picked at T.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from offsetlake.errors import InvalidValueError

METHODS: Final[tuple[str, ...]] = ("mapping", "k2k_tracing_headers", "offset_sync", "checkpoint")
"""Every translation method, in the default precedence: record-level evidence first (K2K's mappings,
then its tracing headers), then MM2's offset syncs and checkpoints."""


def parse_method_precedence(text: str) -> tuple[str, ...]:
    """Methods in any order, each at most once; the ones not listed follow in the default order (so
    a precedence written before a method existed keeps its meaning)."""
    methods = tuple(method.strip() for method in text.split(","))
    unknown = [method for method in methods if method not in METHODS]
    if unknown or len(set(methods)) != len(methods):
        raise InvalidValueError(f"must list methods of {', '.join(METHODS)}, each at most once, got {text!r}")
    return methods + tuple(method for method in METHODS if method not in methods)


@dataclass(frozen=True)
class Candidate:
    """One method's translation of a group-partition, as :func:`choose` weighs it."""

    method: str
    upstream_offset: int | None
    downstream_offset: int
    freshness: datetime | None
    """The last observation (latest_offsets) or valid_from (--as-of); None sorts last, as in Spark."""


def choose(candidates: Sequence[Candidate], precedence: Sequence[str]) -> tuple[Candidate, bool]:
    """The pure twin of :func:`choose_translation` for one key: (the winner, whether the methods
    translating the freshest upstream offset disagree). The winner is one of ``candidates``; rows
    equal in freshness and precedence keep their input order (Spark leaves that tie unordered)."""
    if not candidates:
        raise ValueError("choose needs at least one candidate")

    def rank(candidate: Candidate) -> int:  # array_position: 1-based, 0 when absent
        return precedence.index(candidate.method) + 1 if candidate.method in precedence else 0

    def fresher_first(candidate: Candidate) -> tuple[bool, float, int]:
        stamp = candidate.freshness
        return (stamp is None, -stamp.timestamp() if stamp else 0.0, rank(candidate))

    freshest_upstream = min(candidates, key=fresher_first).upstream_offset
    eligible = [c for c in candidates if c.upstream_offset == freshest_upstream]
    disagree = len({c.downstream_offset for c in eligible}) > 1
    winner = min(eligible, key=lambda c: (rank(c), *fresher_first(c)[:2]))
    return winner, disagree
