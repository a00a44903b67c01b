"""offsetlake_kafka without Spark or a broker: option parsing, and a reader facing a dead endpoint."""

from __future__ import annotations

import pickle
import socket

import pytest

from offsetlake.data_sources.offsetlake_cluster_health import HealthOptions, HealthStreamReader
from offsetlake.data_sources.offsetlake_group_offsets import (
    GROUP_OFFSETS_ARROW_SCHEMA,
    GROUP_OFFSETS_SCHEMA,
    GroupOffsetsStreamReader,
    GroupSnapshotOptions,
)
from offsetlake.data_sources.offsetlake_kafka import (
    DEFAULT_MAX_RECORDS_PER_PARTITION,
    KAFKA_ARROW_SCHEMA,
    KAFKA_SCHEMA,
    KafkaReadOptions,
    KafkaStreamReader,
)
from offsetlake.data_sources.spark_compat import ADMISSION_CONTROL, ReadAllAvailable
from offsetlake.kafka.admin import KafkaAdminError
from offsetlake.kafka.offset_ranges import EARLIEST, LATEST, OffsetOptionError, OffsetRange
from offsetlake.kafka.range_reader import KafkaReadError, read_offset_range, reader_consumer_config

needs_admission_control = pytest.mark.skipif(
    not ADMISSION_CONTROL, reason="PySpark before 4.2 has no admission control for Python streaming sources"
)

BASE = {"kafka.bootstrap.servers": "b:9092", "subscribe": "orders"}


def test_defaults_follow_spark_streams_start_at_latest_batches_at_earliest() -> None:
    streaming = KafkaReadOptions.parse(BASE, streaming=True)
    batch = KafkaReadOptions.parse(BASE, streaming=False)
    assert streaming.starting.default == LATEST
    assert batch.starting.default == EARLIEST
    assert batch.ending.default == LATEST
    assert batch.fail_on_data_loss is True
    assert batch.max_records_per_partition == DEFAULT_MAX_RECORDS_PER_PARTITION
    assert batch.client_config == {"bootstrap.servers": "b:9092"}


def test_spark_lower_cased_option_names_are_understood() -> None:
    options = {name.lower(): value for name, value in BASE.items()} | {
        "failondataloss": "FALSE",
        "kafkaconsumer.polltimeoutms": "2500",
    }
    parsed = KafkaReadOptions.parse(options, streaming=True)
    assert (parsed.fail_on_data_loss, parsed.poll_timeout_s) == (False, 2.5)


def test_max_offsets_per_trigger_only_where_spark_passes_a_read_limit() -> None:
    options = BASE | {"maxoffsetspertrigger": "10"}
    if ADMISSION_CONTROL:
        assert KafkaReadOptions.parse(options, streaming=True).max_offsets_per_trigger == 10
    else:
        with pytest.raises(OffsetOptionError, match=r"needs PySpark 4\.2"):
            KafkaReadOptions.parse(options, streaming=True)


def test_arrow_schemas_are_the_spark_schemas() -> None:
    """Built with pyarrow (PySpark's to_arrow_schema is internal; its keywords changed in 4.2)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    for spark_schema, arrow_schema in [
        (KAFKA_SCHEMA, KAFKA_ARROW_SCHEMA),
        (GROUP_OFFSETS_SCHEMA, GROUP_OFFSETS_ARROW_SCHEMA),
    ]:
        try:
            converted = to_arrow_schema(spark_schema, timezone="UTC")  # PySpark 4.2
        except TypeError:
            converted = to_arrow_schema(spark_schema)  # PySpark 4.0: UTC timestamps by default
        assert converted == arrow_schema, (converted, arrow_schema)


@pytest.mark.parametrize(
    ("extra", "streaming", "message"),
    [
        ({"kafka.group.id": "g"}, False, "never joins a consumer group"),
        ({"kafka.enable.auto.commit": "true"}, True, "never commits"),
        ({"kafka.auto.offset.reset": "earliest"}, True, "startingOffsets"),
        ({"endingOffsets": "latest"}, True, "batch reads only"),
        ({"maxOffsetsPerTrigger": "5"}, False, "streaming reads only"),
        pytest.param({"maxOffsetsPerTrigger": "0"}, True, ">= 1", marks=needs_admission_control),
        ({"failOnDataLoss": "maybe"}, False, "true or false"),
        ({"includeHeaders": "false"}, False, "always includes headers"),
    ],
)
def test_options_the_reader_cannot_honour_are_rejected(
    extra: dict[str, str], streaming: bool, message: str
) -> None:
    with pytest.raises(OffsetOptionError, match=message):
        KafkaReadOptions.parse(BASE | extra, streaming=streaming)


def test_bootstrap_servers_are_required() -> None:
    with pytest.raises(OffsetOptionError, match=r"kafka\.bootstrap\.servers"):
        KafkaReadOptions.parse({"subscribe": "orders"}, streaming=False)


def test_credentials_stay_out_of_reprs_and_readers_pickle_without_clients() -> None:
    options = KafkaReadOptions.parse(BASE | {"kafka.sasl.password": "hunter2"}, streaming=True)
    assert "hunter2" not in repr(options)
    reader = KafkaStreamReader(options)
    reader._cluster()  # the driver-side admin client is created lazily and never pickled
    assert pickle.loads(pickle.dumps(reader)).options == options


def test_reader_consumer_never_commits_and_user_settings_cannot_change_that() -> None:
    config = reader_consumer_config(
        {"bootstrap.servers": "b", "isolation.level": "read_committed"}, fail_on_data_loss=True
    )
    assert config["enable.auto.commit"] is False
    assert config["auto.offset.reset"] == "error"
    assert config["isolation.level"] == "read_committed"
    assert str(config["group.id"]).startswith("offsetlake-reader-")


def test_a_broker_that_never_answers_is_an_error_not_a_hang() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    batches = read_offset_range(
        {"bootstrap.servers": f"127.0.0.1:{port}"},
        OffsetRange("orders", 0, 0, 10),
        KAFKA_ARROW_SCHEMA,
        fail_on_data_loss=True,
        poll_timeout_s=2,
    )
    with pytest.raises(
        KafkaReadError, match=r"orders-0: no progress for 2s while reading offset 0 of \[0, 10\)"
    ):
        list(batches)


def _dead_endpoint() -> str:
    """A loopback port nobody listens on: every request fails fast with a transport error."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{closed.getsockname()[1]}"


def test_unreachable_and_metadata_timeout_options() -> None:
    parsed = KafkaReadOptions.parse(BASE | {"onUnreachable": "SKIP", "timeoutMs": "1500"}, streaming=True)
    assert (parsed.skip_unreachable, parsed.metadata_timeout_s) == (True, 1.5)
    default = KafkaReadOptions.parse(BASE | {"kafkaConsumer.pollTimeoutMs": "2500"}, streaming=True)
    assert (default.skip_unreachable, default.metadata_timeout_s) == (False, 2.5)
    with pytest.raises(OffsetOptionError, match="fail or skip"):
        KafkaReadOptions.parse(BASE | {"onUnreachable": "ignore"}, streaming=True)
    with pytest.raises(OffsetOptionError, match="timeoutMs"):
        KafkaReadOptions.parse(BASE | {"timeoutMs": "0"}, streaming=True)


def test_a_skipping_stream_reads_nothing_from_a_dead_cluster_and_asks_once() -> None:
    options = {
        "kafka.bootstrap.servers": _dead_endpoint(),
        "subscribe": "orders",
        "timeoutMs": "1000",
    }
    reader = KafkaStreamReader(KafkaReadOptions.parse(options | {"onUnreachable": "skip"}, streaming=True))
    asked = 0
    current_layout = reader._current_layout

    def counted() -> object:
        nonlocal asked
        asked += 1
        return current_layout()

    reader._current_layout = counted  # type: ignore[method-assign]
    start = reader.initialOffset()
    assert start == {}  # no partition known: read from the log start once the cluster answers
    reader.prepareForTriggerAvailableNow()
    assert reader.latestOffset({"orders": {"0": 7}}, ReadAllAvailable()) == {"orders": {"0": 7}}
    assert asked == 1  # one timeout, not one per call

    failing = KafkaStreamReader(KafkaReadOptions.parse(options, streaming=True))
    with pytest.raises(KafkaAdminError, match="cannot list topics"):
        failing.initialOffset()


def test_without_its_start_a_stream_cannot_skip_a_dead_cluster_and_fails_instead() -> None:
    """PySpark 4.0 calls latestOffset() with no start: any answer but the start would move the
    stream's position (records skipped or read twice), so the reader fails the stream."""
    options = {
        "kafka.bootstrap.servers": _dead_endpoint(),
        "subscribe": "orders",
        "timeoutMs": "1000",
    }
    reader = KafkaStreamReader(KafkaReadOptions.parse(options | {"onUnreachable": "skip"}, streaming=True))
    with pytest.raises(KafkaAdminError, match=r"needs PySpark 4\.2"):
        reader.latestOffset()


def test_a_group_snapshot_of_a_dead_cluster_is_an_empty_batch_with_or_without_its_start() -> None:
    options = GroupSnapshotOptions.parse(
        {"kafka.bootstrap.servers": _dead_endpoint(), "onUnreachable": "skip", "timeoutMs": "1000"}
    )
    told = GroupOffsetsStreamReader(options)
    assert told.latestOffset({"snapshot_ms": 5}, ReadAllAvailable()) == {"snapshot_ms": 5}
    untold = GroupOffsetsStreamReader(options)  # PySpark 4.0: a new offset (a time), no partition
    end = untold.latestOffset()
    assert end["snapshot_ms"] > 5
    assert untold.partitions({"snapshot_ms": 5}, end) == []


def test_the_health_check_of_a_dead_cluster_is_one_row_with_its_error() -> None:
    options = HealthOptions.parse(
        {
            "kafka.bootstrap.servers": _dead_endpoint(),
            "cluster": "primary",
            "role": "source",
            "timeoutMs": "1000",
        }
    )
    reader = HealthStreamReader(options)
    first = reader.latestOffset({"checked_ms": 0}, ReadAllAvailable())
    assert reader.latestOffset(first, ReadAllAvailable()) == first  # asked again: no second batch
    assert reader.latestOffset() == first  # PySpark 4.0 passes no start
    (partition,) = reader.partitions({"checked_ms": 0}, first)
    (batch,) = list(reader.read(partition))
    row = batch.to_pylist()[0]
    assert (row["cluster"], row["role"], row["reachable"]) == ("primary", "source", False)
    assert row["error"].startswith("_TRANSPORT") and row["probe_seconds"] < 5
    assert reader.partitions(first, first) == []
    with pytest.raises(OffsetOptionError, match="role"):
        HealthOptions.parse({"kafka.bootstrap.servers": "b:1", "cluster": "x", "role": "primary"})
