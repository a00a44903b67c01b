"""The plan of a fleet: the rule's common outcomes decided column by column, every other key by the rule.

The rule is :func:`offsetlake.apply.planner.plan_partition`: one group-partition, every guard, in
Python. A failover plans up to a million group-partitions, nearly all with one translation and a
common outcome (apply, clamp, no-op, rewind refused, missing topic, group refused): those are
decided here with Arrow and only their rows are built in Python; a key any other guard may change
is *deferred*, handed to the rule itself. The plan equals the rule's, row for row
(tests/unit/test_planner_columns.py, hypothesis).

:data:`COLUMN_GUARDS` says, for every field of ``Guards``, where the columns stand: ``decided``
(the columns compute the rule's outcome for it), ``deferred`` (every key it may change goes to the
rule) or ``outside`` (no plan row depends on it: it is read before or after the plan). A test holds
its keys equal to the fields of ``Guards``, so a new field fails until it is placed here.

A new guard goes in the rule first: its ``Guards`` field and its check in
``planner.plan_partition``, with its unit tests. Then it is placed here: ``deferred``, with a check
in :func:`_deferred` sending to the rule every key the field may change (always right: the rule
decides those), or ``decided`` when the columns compute its outcome as the rule would (a code, and
its row in :meth:`_Columns.rows`). Either way the parity test's scenarios draw it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Final, Literal

from offsetlake.apply.planner import (
    BEFORE_START,
    MOVES,
    PAST_END,
    Action,
    Guards,
    PlanRow,
    TargetGroup,
    TargetState,
    group_refusal,
    invalid_reason,
    invalid_row,
    k2k_guarded_groups,
    keep_alive_due,
    missing_reason,
    move_reason,
    no_bounds_error,
    plan_each,
    plan_partition,
    rewind_reason,
)
from offsetlake.contract.gold import GoldOffset
from offsetlake.mirror.positions import GroupPartition

if TYPE_CHECKING:
    import pyarrow as pa

GuardPlace = Literal["decided", "deferred", "outside"]

COLUMN_GUARDS: Final[Mapping[str, GuardPlace]] = {
    # Ages, read by the stale and keep-alive checks only: both defer.
    "reference_time": "deferred",
    # A translation older than max_age goes to the rule (its reason names the age).
    "max_age": "deferred",
    # The rewind refusal (_REWIND) when not allowed; a move when allowed.
    "allow_rewind": "decided",
    # Read after the plan (planner.refused_by_active_policy): the row is the group refusal either way.
    "active_group_policy": "outside",
    # A translation older than the one applied goes to the rule.
    "last_applied": "deferred",
    # A no-op whose keep-alive is due goes to the rule (refresh_retention and the target's metadata).
    "keep_alive_after": "deferred",
    "last_committed_at": "deferred",
    # A group K2K's guard marks is refused (_REFUSED) ...
    "k2k_guard_prefix": "decided",
    # ... unless overridden: then its keys go to the rule (the reason's note on K2K).
    "ignore_k2k_guard": "deferred",
    # A key with a mapping conflict goes to the rule, which reads on_multiple_targets for it.
    "mapping_conflicts": "deferred",
    "on_multiple_targets": "deferred",
    # A refused rewind of a key offsetlake last verified goes to the rule: it tells a source rewind.
    "last_verified_offset": "deferred",
    # Every key of a source whose newest checkpoints were not read goes to the rule.
    "unread_sources": "deferred",
    # Partitions gold does not translate, planned beside the plan (placement.plan_untranslated).
    "untranslated": "outside",
    # A group a failover placed is refused (_REFUSED), by planner.group_refusal as the rule does.
    "failover_holds": "decided",
}


def build_plan(offsets: Sequence[GoldOffset], target: TargetState, guards: Guards) -> list[PlanRow]:
    """One row per (group, topic, partition), sorted, each with its action and the reason for it:
    invalid gold rows first, then every valid key, decided in columns or deferred to the rule.
    Names or numbers Arrow cannot hold (nothing Kafka carries) are planned by the rule alone."""
    guarded = k2k_guarded_groups(target, guards.k2k_guard_prefix)
    columns = _Columns.of(offsets, target, guards, guarded)
    if columns is None:
        return plan_each(offsets, target, guards, guarded)
    invalid = [invalid_row(offsets[index], invalid_reason(offsets[index]) or "") for index in columns.invalid]
    with _collector_paused():
        rows = columns.rows(offsets, target, guards, guarded)
    return sorted(invalid, key=lambda row: row.key) + rows


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while the rows are built: they hold no cycles, and its
    passes over a heap that grows by a million objects cost a third of building them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# What _Columns decides for a group-partition; _DEFER leaves it to the rule (planner.plan_partition).
_DEFER, _MOVE, _NOOP, _REWIND, _MISSING, _REFUSED, _NO_BOUNDS = range(7)
_PARTITION_BITS = 31
"""A (topic, partition) pair is one INT64 while the plan is columns: topic code << 31 | partition."""


@dataclass(frozen=True)
class _Columns:
    """The valid gold rows sorted by key, cut into spans of one group-partition each, and for every
    span the outcome of the rule when Arrow can decide it (a ``_*`` code), with the values its row
    needs. Nothing here is a Python object per row, until :meth:`rows` builds the plan."""

    invalid: list[int]
    """Indices (in the gold offsets) of the rows :func:`planner.invalid_reason` refuses."""
    order: pa.Array
    """Indices of the valid rows in key order, with equal keys in gold's order (a pyarrow Array)."""
    starts: list[int]
    sizes: list[int]
    firsts: list[int]
    """Per span, the index (in the gold offsets) of its first row."""
    codes: list[int]
    moves: list[int]
    """Per span of code _MOVE: 0 apply, 1 clamp to the log end, 2 clamp to the log start."""
    planned: list[int | None]
    current: list[int | None]
    counts: list[int | None]
    """Partitions of the span's topic on the target (None: no such topic)."""
    group_codes: list[int]
    group_types: list[str]
    refusals: list[tuple[Action, str] | None]
    """Per group (by code): why no partition of it is altered, or None."""

    @classmethod
    def of(
        cls, offsets: Sequence[GoldOffset], target: TargetState, guards: Guards, guarded: Mapping[str, str]
    ) -> _Columns | None:
        """The columns, or None when a name or number does not fit Arrow's types (a lone surrogate, a
        number past INT64, a partition past INT32): nothing Kafka carries, so the rule plans those."""
        try:
            return cls._of(offsets, target, guards, guarded)
        except (UnicodeError, OverflowError):
            return None

    @classmethod
    def _of(
        cls, offsets: Sequence[GoldOffset], target: TargetState, guards: Guards, guarded: Mapping[str, str]
    ) -> _Columns:
        refused, keyed = _keyed(offsets)
        spans = _Spans(keyed)
        sides = _TargetSides.of(target, guards, guarded, spans)
        decided = _decide(spans, sides, guards)
        deferred = _deferred(offsets, spans, sides, guards, decided.codes)
        return cls(
            invalid=refused,
            order=keyed.table["index"].combine_chunks(),
            firsts=spans.firsts,
            starts=spans.starts.to_pylist(),
            sizes=spans.sizes,
            codes=[_DEFER if defer else code for code, defer in zip(decided.codes, deferred, strict=True)],
            moves=decided.moves,
            planned=decided.planned,
            current=sides.current.to_pylist(),
            counts=sides.counts.to_pylist(),
            group_codes=spans.column["group"].to_pylist(),
            group_types=[group.type for group in sides.described],
            refusals=sides.refusals,
        )

    def rows(
        self, offsets: Sequence[GoldOffset], target: TargetState, guards: Guards, guarded: Mapping[str, str]
    ) -> list[PlanRow]:
        """The plan rows of the valid gold rows, in key order: each span's row built from its code,
        or by the rule (:func:`planner.plan_partition`) for _DEFER."""
        rows: list[PlanRow] = []
        append = rows.append
        # Enum members as locals: each Action.X costs a class attribute lookup (0.3 µs in 3.11).
        moves, noop, rewind, missing = (
            MOVES,
            Action.NOOP,
            Action.SKIP_WOULD_REWIND,
            Action.SKIP_MISSING_TOPIC,
        )
        group_types, refusals = self.group_types, self.refusals
        # Each PlanRow is made with its fields in place, as its __init__ would make it (it has no
        # __post_init__): a frozen dataclass's __init__ sets 14 fields one object.__setattr__ at a
        # time, twice the cost of the whole row here (1 µs a row on the 2-core machine).
        new, set_fields = object.__new__, object.__setattr__
        spans = zip(
            self.firsts, self.codes, self.planned, self.current, self.group_codes, self.moves, self.counts,
            strict=True,
        )  # fmt: skip
        for span, (first, code, to, current, group, move, count) in enumerate(spans):
            offset = offsets[first]
            topic, partition = offset.topic, offset.partition
            planned: int | None = to
            if code == _MOVE:
                action, reason = moves[move], move_reason(move, offset.downstream_offset, to, current)
            elif code == _NOOP:
                action, reason = noop, f"already at {to}"
            elif code == _REWIND:
                action, reason = rewind, rewind_reason(current, to)
            elif code == _MISSING:
                action, reason, planned = missing, missing_reason(topic, partition, count), None
            elif code == _REFUSED:
                refusal = refusals[group]
                assert refusal is not None  # _REFUSED: the group has a refusal
                (action, reason), planned = refusal, None
            elif code == _NO_BOUNDS:
                raise no_bounds_error(topic, partition)
            else:
                indices = self.order.slice(self.starts[span], self.sizes[span]).to_pylist()
                key = (offset.consumer_group, topic, partition)
                append(plan_partition(key, [offsets[index] for index in indices], target, guards, guarded))
                continue
            source_timestamp = offset.source_timestamp
            row = new(PlanRow)
            set_fields(row, "__dict__", {
                "source_cluster": offset.source_cluster, "consumer_group": offset.consumer_group,
                "topic": topic, "partition": partition, "translated_offset": offset.downstream_offset,
                "planned_offset": planned, "current_offset": current, "action": action, "reason": reason,
                "source_timestamp": source_timestamp, "method": offset.method,
                "last_observed_at": offset.observed_at or source_timestamp, "group_type": group_types[group],
                "metadata": offset.metadata,
            })  # fmt: skip
            append(row)
        return rows


@dataclass(frozen=True)
class _Keyed:
    """The valid gold rows with their names as codes (an index in ``groups``/``topics``, which sort
    as Python sorts str), sorted by group, topic, partition and gold index."""

    table: pa.Table
    """Columns group, topic (codes), partition, translated, index (in the gold offsets)."""
    groups: list[str]
    topics: list[str]


def _keyed(offsets: Sequence[GoldOffset]) -> tuple[list[int], _Keyed]:
    """The indices of the rows that are no Kafka position (planner.invalid_reason's), and the rest
    keyed; OverflowError for a partition past INT32."""
    import pyarrow as pa
    import pyarrow.compute as pc

    gold = pa.table(
        {
            "group": pa.array(list(map(attrgetter("consumer_group"), offsets)), pa.string()),
            "topic": pa.array(list(map(attrgetter("topic"), offsets)), pa.string()),
            "partition": pa.array(list(map(attrgetter("partition"), offsets)), pa.int64()),
            "translated": pa.array(list(map(attrgetter("downstream_offset"), offsets)), pa.int64()),
        }
    )
    refused = pc.or_(
        pc.or_(_empty(gold["group"]), _empty(gold["topic"])),
        pc.or_(pc.less(gold["partition"], 0), pc.less(gold["translated"], 0)),
    )
    valid = pc.indices_nonzero(pc.invert(refused)).cast(pa.int64())
    gold = gold.take(valid)
    if gold.num_rows and pc.max(gold["partition"]).as_py() >> _PARTITION_BITS:
        raise OverflowError("a partition past INT32")
    groups, topics = _sorted_unique(gold["group"]), _sorted_unique(gold["topic"])
    keyed = pa.table(
        {
            "group": pc.index_in(gold["group"], value_set=groups).cast(pa.int64()),
            "topic": pc.index_in(gold["topic"], value_set=topics).cast(pa.int64()),
            "partition": gold["partition"],
            "translated": gold["translated"],
            "index": valid,
        }
    )
    by = ["group", "topic", "partition", "index"]
    keyed = keyed.take(pc.sort_indices(keyed, sort_keys=[(name, "ascending") for name in by]))
    return pc.indices_nonzero(refused).to_pylist(), _Keyed(keyed, groups.to_pylist(), topics.to_pylist())


class _Spans:
    """The keyed rows cut into spans of one group-partition each (one key: the group's code times
    the number of distinct topic-partitions, plus the pair's code), each span's first row's columns,
    and the span of any (group, topic, partition) found by its key."""

    def __init__(self, keyed: _Keyed) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        from offsetlake.apply.key_spans import key_spans

        table = keyed.table
        pairs = _pair(table["topic"], table["partition"])
        self.distinct_pairs = pc.unique(pairs)
        keys = pc.add(
            pc.multiply(table["group"], len(self.distinct_pairs)),
            pc.index_in(pairs, value_set=self.distinct_pairs).cast(pa.int64()),
        ).combine_chunks()
        self.starts, sizes = key_spans(pa.table({"key": keys}), ["key"])
        self.sizes: list[int] = sizes.to_pylist()
        self.keys = keys.take(self.starts)
        self.column = {
            name: table[name].take(self.starts) for name in ("group", "topic", "partition", "translated")
        }
        self.firsts: list[int] = table["index"].take(self.starts).to_pylist()
        self.groups, self.topics = keyed.groups, keyed.topics
        self.group_code = {name: code for code, name in enumerate(keyed.groups)}
        self.topic_code = {name: code for code, name in enumerate(keyed.topics)}

    def __len__(self) -> int:
        return len(self.sizes)

    def find(
        self, entry_groups: list[int | None], entry_topics: list[int | None], partitions: list[int]
    ) -> pa.Array:
        """For each span, the position of its key in the entries (group and topic codes, partitions;
        null when it is not there)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        partition = pa.array(partitions, pa.int64())
        in_range = pc.and_(pc.greater_equal(partition, 0), pc.less(partition, 1 << _PARTITION_BITS))
        pair = _pair(pa.array(entry_topics, pa.int64()), pc.if_else(in_range, partition, None))
        entry_keys = pc.add(
            pc.multiply(pa.array(entry_groups, pa.int64()), len(self.distinct_pairs)),
            pc.index_in(pair, value_set=self.distinct_pairs).cast(pa.int64()),
        )
        return pc.index_in(self.keys, value_set=entry_keys)

    def found(self, keys: Iterable[GroupPartition]) -> list[tuple[int, int]]:
        """(span, position in ``keys``) of every span whose key ``keys`` holds."""
        import pyarrow.compute as pc

        keys = list(keys)
        group_code, topic_code = self.group_code, self.topic_code
        at = self.find(
            [group_code.get(group) for group, _, _ in keys],
            [topic_code.get(topic) for _, topic, _ in keys],
            [partition for _, _, partition in keys],
        )
        spans = pc.indices_nonzero(pc.is_valid(at))
        return list(zip(spans.to_pylist(), at.take(spans).to_pylist(), strict=True))


@dataclass(frozen=True)
class _TargetSides:
    """What the target says of each group (few: Python per value), and per span its topic's partition
    count, its log bounds and the group's committed offset (Arrow columns)."""

    described: list[TargetGroup]
    refusals: list[tuple[Action, str] | None]
    """Per group: planner.group_refusal, as the rule takes it."""
    overridden: pa.Array
    """Per span: its group carries K2K's guard and the operator overrides it."""
    counts: pa.Array
    log_start: pa.Array
    log_end: pa.Array
    current: pa.Array

    @classmethod
    def of(
        cls, target: TargetState, guards: Guards, guarded: Mapping[str, str], spans: _Spans
    ) -> _TargetSides:
        import pyarrow as pa
        import pyarrow.compute as pc

        described = [target.group(name) for name in spans.groups]
        refusals = [
            group_refusal(name, group, guarded.get(name), guards)
            for name, group in zip(spans.groups, described, strict=True)
        ]
        overridden = pa.array(
            [name in guarded and guards.ignore_k2k_guard for name in spans.groups], pa.bool_()
        )
        counts = pa.array([target.partition_counts.get(topic) for topic in spans.topics], pa.int64())
        bounds = [
            target.log_bounds.get(
                (spans.topics[pair >> _PARTITION_BITS], pair & ((1 << _PARTITION_BITS) - 1))
            )
            for pair in spans.distinct_pairs.to_pylist()
        ]
        column = spans.column
        pair_codes = pc.index_in(_pair(column["topic"], column["partition"]), value_set=spans.distinct_pairs)
        log_start = pa.array([None if b is None else b.log_start for b in bounds], pa.int64())
        log_end = pa.array([None if b is None else b.log_end for b in bounds], pa.int64())
        return cls(
            described=described,
            refusals=refusals,
            overridden=overridden.take(column["group"]),
            counts=counts.take(column["topic"]),
            log_start=log_start.take(pair_codes),
            log_end=log_end.take(pair_codes),
            current=_committed(target, spans),
        )


def _committed(target: TargetState, spans: _Spans) -> pa.Array:
    """Per span, the offset its group committed on the target (null: none)."""
    import pyarrow as pa

    entry_groups: list[int | None] = []
    entry_topics: list[int | None] = []
    partitions: list[int] = []
    positions: list[int] = []
    group_code, topic_code = spans.group_code, spans.topic_code
    for name, group in target.groups.items():
        code, committed = group_code.get(name), group.committed
        if code is not None and committed:  # a group gold does not name has no span
            entry_groups += [code] * len(committed)
            entry_topics += [topic_code.get(topic) for topic, _ in committed]
            partitions += [partition for _, partition in committed]
            positions += [position.offset for position in committed.values()]
    return pa.array(positions, pa.int64()).take(spans.find(entry_groups, entry_topics, partitions))


@dataclass(frozen=True)
class _Decided:
    """Per span, the rule's outcome when no deferred guard bears on it: a code, the move (an index
    of planner.MOVES) and the planned offset."""

    codes: list[int]
    moves: list[int]
    planned: list[int | None]


def _decide(spans: _Spans, sides: _TargetSides, guards: Guards) -> _Decided:
    """The rule's checks as column operations, the last listed winning as the rule's first does."""
    import pyarrow as pa
    import pyarrow.compute as pc

    translated, log_start, log_end, current = (
        spans.column["translated"],
        sides.log_start,
        sides.log_end,
        sides.current,
    )
    past_end, before_start = pc.greater(translated, log_end), pc.less(translated, log_start)
    planned = pc.if_else(past_end, log_end, pc.if_else(before_start, log_start, translated))
    moves = pc.if_else(past_end, PAST_END, pc.if_else(before_start, BEFORE_START, 0))
    rewind = pc.fill_null(pc.less(planned, current), False) if not guards.allow_rewind else None
    refused_groups = pa.array([refusal is not None for refusal in sides.refusals], pa.bool_())
    codes = pa.array([_MOVE] * len(spans), pa.int8())
    for condition, code in (
        (pc.fill_null(pc.equal(current, planned), False), _NOOP),
        (rewind, _REWIND),
        (pc.is_null(log_end), _NO_BOUNDS),
        (refused_groups.take(spans.column["group"]), _REFUSED),
        (pc.fill_null(pc.greater_equal(spans.column["partition"], sides.counts), True), _MISSING),
    ):  # fmt: skip
        if condition is not None:
            codes = pc.if_else(condition, pa.scalar(code, pa.int8()), codes)
    return _Decided(codes.to_pylist(), moves.to_pylist(), planned.to_pylist())


def _deferred(
    offsets: Sequence[GoldOffset], spans: _Spans, sides: _TargetSides, guards: Guards, codes: list[int]
) -> list[bool]:
    """Per span, whether the rule plans it: several translations of one key (the rule compares them),
    or a deferred guard of COLUMN_GUARDS that may change its outcome."""
    deferred = [size > 1 for size in spans.sizes]
    firsts = spans.firsts
    if guards.max_age is not None:  # max_age, reference_time
        reference, max_age = guards.reference_time, guards.max_age
        for span, first in enumerate(firsts):
            offset = offsets[first]
            if reference - (offset.observed_at or offset.source_timestamp) > max_age:
                deferred[span] = True
    if guards.last_applied and not guards.allow_rewind:
        applied = list(guards.last_applied.items())
        for span, position in spans.found(key for key, _ in applied):
            if offsets[firsts[span]].source_timestamp < applied[position][1]:
                deferred[span] = True
    for span, _ in spans.found(guards.mapping_conflicts):  # mapping_conflicts, on_multiple_targets
        deferred[span] = True
    if guards.unread_sources:
        for span, first in enumerate(firsts):
            if offsets[first].source_cluster in guards.unread_sources:
                deferred[span] = True
    if guards.last_verified_offset:  # offsetlake's own position: the rule tells a source rewind
        for span, _ in spans.found(guards.last_verified_offset):
            if codes[span] == _REWIND:
                deferred[span] = True
    for span, overridden in enumerate(sides.overridden.to_pylist()):  # ignore_k2k_guard
        if overridden:
            deferred[span] = True
    if guards.keep_alive_after is not None and guards.last_committed_at:
        committed_at = list(guards.last_committed_at.items())
        for span, position in spans.found(key for key, _ in committed_at):
            if codes[span] == _NOOP and keep_alive_due(committed_at[position][0], guards) is not None:
                deferred[span] = True
    return deferred


def _empty(column: pa.ChunkedArray) -> pa.ChunkedArray:
    import pyarrow.compute as pc

    return pc.fill_null(pc.equal(column, ""), True)


def _sorted_unique(column: pa.ChunkedArray) -> pa.Array:
    """The distinct values in Python's order of str (UTF-8 bytes sort as code points do)."""
    import pyarrow.compute as pc

    distinct = pc.unique(column)
    return distinct.take(pc.sort_indices(distinct))


def _pair(topic: pa.ChunkedArray | pa.Array, partition: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray:
    import pyarrow.compute as pc

    return pc.add(pc.shift_left(topic, _PARTITION_BITS), partition)
