"""fixtures/records.json: up to date, hand-checked against the documented layout, and decoded as expected."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import pytest

from offsetlake.codecs import CodecError
from offsetlake.codecs.connect import decode_connect_offset
from offsetlake.codecs.mappings import K2K_JSON_V1, mapping_decoder
from offsetlake.codecs.mm2 import decode_checkpoint, decode_heartbeat, decode_offset_sync
from tests.fixture_records import FIXTURE_KINDS, FIXTURE_MANIFEST, FixtureRecord, load_fixture_records

DECODERS: dict[str, Callable[[bytes | None, bytes | None], Any]] = {
    "checkpoint": decode_checkpoint,
    "offset_sync": decode_offset_sync,
    "heartbeat": decode_heartbeat,
    "connect_offset": decode_connect_offset,
    "k2k_mapping": mapping_decoder(K2K_JSON_V1),
}
RECORDS = load_fixture_records()


def test_manifest_is_what_the_generator_writes() -> None:
    spec = importlib.util.spec_from_file_location(
        "fixture_generator", FIXTURE_MANIFEST.with_name("generate.py")
    )
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert FIXTURE_MANIFEST.read_text(encoding="utf-8") == generator.render_manifest(), (
        "fixtures/records.json is stale: run .venv/bin/python fixtures/generate.py"
    )


def test_manifest_shape() -> None:
    ids = [record.id for record in RECORDS]
    assert len(ids) == len(set(ids))
    assert {record.kind for record in RECORDS} == set(FIXTURE_KINDS)
    assert all((record.expected is None) != (record.error is None) for record in RECORDS)


def test_required_cases_are_present() -> None:
    ids = {record.id for record in RECORDS}
    required = {
        "checkpoint-doc-example",
        "checkpoint-non-ascii-group",
        "checkpoint-long-metadata",
        "checkpoint-max-int64",
        "checkpoint-partition-gt-0",
        "checkpoint-truncated-key",
        "checkpoint-truncated-value",
        "checkpoint-negative-string-length",
        "checkpoint-overlong-string-length",
        "checkpoint-invalid-utf8",
        "checkpoint-version-1",
        "checkpoint-tombstone",
        "checkpoint-missing-key",
        "checkpoint-trailing-value-bytes",
        "offset-sync-value-15-bytes",
        "offset-sync-value-17-bytes",
        "heartbeat-version-1",
        "connect-offset-tombstone",
        "connect-offset-bad-json-key",
        "k2k-mapping-bad-json",
        # Well-formed bytes, but no real Kafka position (codecs/semantics.py).
        "checkpoint-empty-group",
        "checkpoint-empty-topic",
        "checkpoint-topic-with-space",
        "checkpoint-topic-dot-dot",
        "checkpoint-topic-250-chars",
        "checkpoint-topic-trailing-newline",
        "checkpoint-negative-partition",
        "checkpoint-negative-upstream",
        "checkpoint-negative-downstream",
        "checkpoint-byte-error-before-meaning",
        "offset-sync-negative-partition",
        "offset-sync-negative-upstream",
        "offset-sync-negative-downstream",
        "offset-sync-topic-with-slash",
        "connect-offset-negative-partition",
        "connect-offset-negative-offset",
        "connect-offset-invalid-topic",
        "k2k-mapping-invalid-target-topic",
        "k2k-mapping-non-ascii",
        "heartbeat-empty-source-alias",
    }
    assert required <= ids


def _by_id(record_id: str) -> FixtureRecord:
    return next(record for record in RECORDS if record.id == record_id)


def test_records_match_the_documented_byte_layout_by_hand() -> None:
    doc_example = _by_id("checkpoint-doc-example")
    # docs/mm2-reference.md §1.2: key 0011 6f72…2d31 000e 7573…7273 00000000
    assert doc_example.key == bytes.fromhex(
        "0011" + "6f72646572732d636f6e73756d65722d31" + "000e" + "75732d656173742e6f7264657273" + "00000000"
    )
    assert doc_example.value == bytes.fromhex("0000" + "0000000000000064" + "0000000000000062" + "0000")
    offset_sync = _by_id("offset-sync-partition-gt-0")  # payments / 7 / 5000 -> 4321
    assert offset_sync.key == bytes.fromhex("0008" + "7061796d656e7473" + "00000007")
    assert offset_sync.value == bytes.fromhex("0000000000001388" + "00000000000010e1")
    heartbeat = _by_id("heartbeat-basic")  # us-east -> us-west at 1700000000000 ms
    assert heartbeat.key == bytes.fromhex("0007" + "75732d65617374" + "0007" + "75732d77657374")
    assert heartbeat.value == bytes.fromhex("0000" + "0000018bcfe56800")
    non_ascii = _by_id("checkpoint-non-ascii-group")  # 'ü' is 2 bytes, 'グ' 3, '🚀' 4: 31 bytes in all
    assert non_ascii.key is not None and non_ascii.key[:2] == bytes.fromhex("001f")
    connect = _by_id("connect-offset-checkpoint-connector")
    assert (
        connect.key
        == b'["MirrorCheckpointConnector",{"partition":0,"topic":"orders","group":"orders-consumer-1"}]'
    )
    assert connect.value == b'{"offset":0}'
    assert _by_id("connect-offset-tombstone").value is None


@pytest.mark.parametrize("record", RECORDS, ids=[record.id for record in RECORDS])
def test_codecs_decode_fixtures_as_the_manifest_says(record: FixtureRecord) -> None:
    decode = DECODERS[record.kind]
    if record.error is not None:
        with pytest.raises(CodecError) as caught:
            decode(record.key, record.value)
        assert record.error in str(caught.value)
    else:
        assert asdict(decode(record.key, record.value)) == record.expected


def test_loader_filters_by_kind() -> None:
    checkpoints = load_fixture_records("checkpoint")
    assert checkpoints and all(record.kind == "checkpoint" for record in checkpoints)
    assert len(checkpoints) == sum(record.kind == "checkpoint" for record in RECORDS)
    with pytest.raises(ValueError, match=r"unknown fixture kind 'checkpoints'"):
        load_fixture_records("checkpoints")
