"""``offsetlake mm2 reset-offsets`` against a real broker, on Connect offsets the simulator stored
the way Connect does (murmur2 partition, MirrorSourceConnector keys), next to another connector's.

Dry run changes nothing; without --connectors-stopped it is refused; --execute tombstones every
selected key of the connector, and no other key, with the exact key bytes in the partition the
Java producer chooses; the audit table records the runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from offsetlake.codecs.connect import ConnectOffset, decode_connect_offset, encode_connect_offset
from offsetlake.kafka.java_partitioner import java_partition
from offsetlake.local.home import HOME_ENV
from offsetlake.mm2_reset.offsets_topic import read_offsets_topic
from offsetlake_dev.simulate import MirrorSettings, MirrorSimulator
from tests.kafka_helpers import ClustersUnderTest, create_topic, log_end_offset, log_start_offset

pytestmark = pytest.mark.kafka


def _offsetlake(*argv: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "offsetlake.cli", *argv],
        env={**os.environ, HOME_ENV: str(home)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _newest(bootstrap: str, topic: str) -> dict[bytes, tuple[int, bytes | None]]:
    _, stored = read_offsets_topic({"bootstrap.servers": bootstrap}, topic, timeout_s=30)
    return {entry.key: (entry.partition, entry.value) for entry in stored}


def test_reset_offsets_dry_run_refusal_and_execute(
    source_bootstrap: str, target_bootstrap: str, tmp_path: Path
) -> None:
    token = uuid.uuid4().hex[:8]
    orders, payments = f"orders-{token}", f"payments-{token}"
    settings = MirrorSettings(f"src-{token}", f"tgt-{token}", source_bootstrap, target_bootstrap)
    with MirrorSimulator(settings) as simulator:
        for topic in (orders, payments):
            simulator.create_topic(topic, 2)
            simulator.produce(topic, 3)
        simulator.replicate()
        simulator.commit()
    offsets_topic = settings.connect_offsets_topic
    # Another connector (a second MM2 flow on a shared Connect cluster) stores the same topic.
    other = ConnectOffset(
        "OtherMirrorSource", {"cluster": "x", "partition": 0, "topic": orders}, {"offset": 2}
    )
    producer = Producer({"bootstrap.servers": target_bootstrap, "partitioner": "murmur2_random"})
    other_key, other_value = encode_connect_offset(other)
    producer.produce(offsets_topic, key=other_key, value=other_value)
    assert producer.flush(30) == 0

    before = _newest(target_bootstrap, offsets_topic)
    assert len(before) == 5
    for key, (partition, _) in before.items():  # the simulator stored each key where Java would
        assert partition == java_partition(key, settings.connect_offsets_partitions), key

    base = ["mm2", "reset-offsets", "--connector", "MirrorSourceConnector", "--offsets-topic", offsets_topic]
    base += ["--target", target_bootstrap]
    syncs = [
        "--truncate-offset-syncs",
        settings.offset_syncs_topic,
        "--offset-syncs-bootstrap",
        source_bootstrap,
    ]
    syncs_before = log_end_offset(source_bootstrap, settings.offset_syncs_topic)
    assert syncs_before > 0
    dry = _offsetlake(*base, "--topics", f"orders-{token}", *syncs, home=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert "2 keys (tombstone 2); dry run, nothing written" in dry.stdout
    assert f"{settings.offset_syncs_topic}: {syncs_before} offset-sync records; dry run, nothing deleted" in (
        dry.stdout
    )
    assert _newest(target_bootstrap, offsets_topic) == before
    assert log_start_offset(source_bootstrap, settings.offset_syncs_topic) == 0

    refused = _offsetlake(*base, "--execute", home=tmp_path)
    assert refused.returncode == 2 and "--connectors-stopped" in refused.stderr
    assert _newest(target_bootstrap, offsets_topic) == before

    executed = _offsetlake(
        *base, "--topics", f"orders-{token}", "--execute", "--connectors-stopped", home=tmp_path
    )
    assert executed.returncode == 0, executed.stderr
    assert "verified" in executed.stdout
    after = _newest(target_bootstrap, offsets_topic)
    for key, (partition, value) in before.items():
        record = decode_connect_offset(key, value)
        selected = record.connector == "MirrorSourceConnector" and record.partition["topic"] == orders
        assert after[key][0] == partition  # same key bytes, same (Java) partition
        assert (after[key][1] is None) == selected, record
    assert after[other_key] == before[other_key]

    audit = _offsetlake(
        "sql", "--json", "SELECT mode, action, verified FROM offsetlake.mm2_reset_audit", home=tmp_path
    )
    assert audit.returncode == 0, audit.stderr
    rows = json.loads(audit.stdout.strip().splitlines()[-1])[0]["rows"]
    assert sorted(map(tuple, rows)) == [
        ("dry_run", "delete_records", None),  # one partition of the offset-syncs topic
        ("dry_run", "tombstone", None),
        ("dry_run", "tombstone", None),
        ("execute", "tombstone", True),
        ("execute", "tombstone", True),
    ]


def test_truncating_the_offset_syncs_deletes_every_record(
    kafka_clusters: ClustersUnderTest, tmp_path: Path
) -> None:
    if kafka_clusters.is_tansu:
        pytest.skip(
            "Tansu cannot delete records (DeleteRecords panics); set OFFSETLAKE_TEST_SOURCE_BOOTSTRAP and "
            "OFFSETLAKE_TEST_TARGET_BOOTSTRAP to a real Kafka pair to run this"
        )
    token = uuid.uuid4().hex[:8]
    source, target = kafka_clusters.source_bootstrap, kafka_clusters.target_bootstrap
    settings = MirrorSettings(f"src-{token}", f"tgt-{token}", source, target)
    with MirrorSimulator(settings) as simulator:
        simulator.create_topic(f"orders-{token}", 2)
        simulator.produce(f"orders-{token}", 3)
        simulator.replicate()
        simulator.commit()
    topic = settings.offset_syncs_topic
    end = log_end_offset(source, topic)
    executed = _offsetlake(
        "mm2", "reset-offsets", "--connector", "MirrorSourceConnector",
        "--offsets-topic", settings.connect_offsets_topic, "--target", target,
        "--execute", "--connectors-stopped", "--truncate-offset-syncs", topic,
        "--offset-syncs-bootstrap", source, home=tmp_path,
    )  # fmt: skip
    assert executed.returncode == 0, executed.stderr
    assert f"{topic}: {end} offset-sync records; deleted and verified" in executed.stdout
    assert log_start_offset(source, topic) == end


def test_the_offsets_topic_is_read_to_its_end_when_the_last_batch_holds_many_records(
    target_bootstrap: str,
) -> None:
    """The end is the fetch's (partition EOF), not ListOffsets' (Tansu's "latest" counts a
    multi-record batch as one record): every key is found, more than one consume returns."""
    topic = f"connect-offsets-{uuid.uuid4().hex[:8]}"
    create_topic(target_bootstrap, topic)
    keys = [b"key-%d" % n for n in range(1200)]
    producer = Producer({"bootstrap.servers": target_bootstrap, "linger.ms": 1000})
    for key in keys:  # one batch: no poll or flush before the last record
        producer.produce(topic, key=key, value=b"{}", partition=0)
    assert producer.flush(30) == 0

    assert sorted(_newest(target_bootstrap, topic)) == sorted(keys)
