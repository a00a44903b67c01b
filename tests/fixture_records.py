"""Load fixtures/records.json with plain json, so any test (pure, Spark or broker) can replay it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIXTURE_MANIFEST = Path(__file__).resolve().parent.parent / "fixtures" / "records.json"
FIXTURE_KINDS = ("checkpoint", "offset_sync", "heartbeat", "connect_offset", "k2k_mapping")


@dataclass(frozen=True)
class FixtureRecord:
    """One raw record: key None = no key, value None = tombstone; exactly one of expected/error is set."""

    id: str
    kind: str
    key: bytes | None
    value: bytes | None
    expected: dict[str, Any] | None
    error: str | None


def _from_hex(text: str | None) -> bytes | None:
    return None if text is None else bytes.fromhex(text)


def load_fixture_records(kind: str | None = None) -> list[FixtureRecord]:
    """All fixture records, or only those of ``kind``, in manifest order."""
    if kind is not None and kind not in FIXTURE_KINDS:
        raise ValueError(f"unknown fixture kind {kind!r}; expected one of {', '.join(FIXTURE_KINDS)}")
    entries = json.loads(FIXTURE_MANIFEST.read_text(encoding="utf-8"))
    return [
        FixtureRecord(
            id=entry["id"],
            kind=entry["kind"],
            key=_from_hex(entry["key_hex"]),
            value=_from_hex(entry["value_hex"]),
            expected=entry.get("expected"),
            error=entry.get("error"),
        )
        for entry in entries
        if kind is None or entry["kind"] == kind
    ]
