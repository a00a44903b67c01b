"""The offset syncs MM2's checkpoint task still holds: a port of ``OffsetSyncStore``'s sync array.

MM2 does not keep every sync it reads. Per source partition it keeps 64 slots (apache/kafka
connect/mirror/.../OffsetSyncStore.java, ``updateSyncArray`` after KAFKA-15202): slot 0 is the
latest sync (invariant A), slot 63 the earliest usable one (D), and in between syncs are spaced
roughly exponentially: slot i is at most about 2^i offsets behind slot 0 (B) and slots are kept
apart by at least 2^(i-2) (C). A group whose position lies between two retained syncs is
translated from the older one (+1), which is why a group far behind the latest sync gets an
imprecise, re-read-heavy checkpoint. The simulator's checkpoints are computed over these slots.

Modelled: a checkpoint task that finished its initial read of the (empty) syncs topic before the
first sync arrived (``readToEnd``), the steady state of a running MM2.
"""

from __future__ import annotations

from offsetlake.codecs.mm2 import OffsetSync

SYNC_SLOTS = 64
"""``SYNCS_PER_PARTITION = Long.SIZE``: one slot per bit of an offset."""

_LONG_BITS = 64


def _java_long(value: int) -> int:
    """Two's-complement 64-bit wrap-around, so the overflow guards behave as in Java."""
    value &= (1 << _LONG_BITS) - 1
    return value - (1 << _LONG_BITS) if value >= 1 << (_LONG_BITS - 1) else value


def _invariant_b(i_sync: OffsetSync, j_sync: OffsetSync, i: int, j: int) -> bool:
    """Slot i is recent enough relative to slot j: ``i.upstream <= j.upstream + 2^j - 2^i``."""
    bound = _java_long(j_sync.upstream_offset + _java_long(1 << j) - _java_long(1 << i))
    return i_sync is j_sync or bound < 0 or i_sync.upstream_offset <= bound


def _invariant_c(i_sync: OffsetSync, j_sync: OffsetSync, i: int) -> bool:
    """Slot i is far enough from slot j: ``i.upstream >= j.upstream + 2^max(i-2, 0)``."""
    bound = _java_long(j_sync.upstream_offset + (1 << max(i - 2, 0)))
    return i_sync is j_sync or (bound >= 0 and i_sync.upstream_offset >= bound)


def update_sync_slots(slots: list[OffsetSync] | None, sync: OffsetSync) -> list[OffsetSync]:
    """The slots after reading ``sync``; a new list, the input is left as it was.

    Slots are compared by identity, as Kafka compares ``OffsetSync`` references.
    """
    if slots is None or slots[0].upstream_offset > sync.upstream_offset:
        # First sync, or the upstream was rewound: older syncs are invalid, overwrite them all.
        return [sync] * SYNC_SLOTS
    original = slots
    updated = list(slots)
    replacement = sync
    replacement_index = 0  # the next slot of the original array considered as a replacement
    updated[0] = replacement  # invariant A
    for current in range(1, SYNC_SLOTS):
        previous = current - 1
        while True:  # Java's do { ... } while (replacementIndex < current && skipOldValue)
            old_value = original[replacement_index]
            is_recent = _invariant_b(updated[previous], old_value, previous, current)
            separated_from_previous = _invariant_c(updated[previous], old_value, previous)
            following = current + 1
            separated_from_next = following >= SYNC_SLOTS or _invariant_c(
                old_value, updated[following], current
            )
            next_replacement = replacement_index + 1
            duplicate = next_replacement < SYNC_SLOTS and old_value is original[next_replacement]
            promote = is_recent and separated_from_previous and separated_from_next
            if promote:
                replacement = old_value
            skip_old_value = duplicate or not separated_from_previous
            if promote or skip_old_value:
                replacement_index += 1
            if not (replacement_index < current and skip_old_value):
                break
        if _invariant_b(updated[previous], updated[current], previous, current):
            break  # invariant B holds here, so it holds for every later slot: keep the tail
        updated[current] = replacement
    return updated


class OffsetSyncStore:
    """Retained syncs per upstream (topic, partition), fed in the order they were written."""

    def __init__(self) -> None:
        self._slots: dict[tuple[str, int], list[OffsetSync]] = {}

    def add(self, sync: OffsetSync) -> None:
        key = (sync.topic, sync.partition)
        self._slots[key] = update_sync_slots(self._slots.get(key), sync)

    def slots(self, topic: str, partition: int) -> list[OffsetSync]:
        """The raw 64 slots, latest first (empty when no sync was read)."""
        return list(self._slots.get((topic, partition), []))

    def retained(self, topic: str, partition: int) -> list[OffsetSync]:
        """The distinct syncs held for one partition, oldest first (empty when none were read)."""
        distinct: list[OffsetSync] = []
        for sync in reversed(self._slots.get((topic, partition), [])):
            if not distinct or distinct[-1] is not sync:
                distinct.append(sync)
        return distinct
