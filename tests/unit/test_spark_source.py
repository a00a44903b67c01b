"""offsetlake_kafka without Spark or a broker: option parsing, and a reader facing a dead endpoint."""

from __future__ import annotations

import pickle
import socket

import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from offsetlake.kafka.offset_ranges import EARLIEST, LATEST, OffsetOptionError, OffsetRange
from offsetlake.kafka.range_reader import KafkaReadError, read_offset_range, reader_consumer_config
from offsetlake.kafka.spark_source import (
    DEFAULT_MAX_RECORDS_PER_PARTITION,
    KAFKA_SCHEMA,
    KafkaReadOptions,
    KafkaStreamReader,
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
        "maxoffsetspertrigger": "10",
        "failondataloss": "FALSE",
        "kafkaconsumer.polltimeoutms": "2500",
    }
    parsed = KafkaReadOptions.parse(options, streaming=True)
    assert (parsed.max_offsets_per_trigger, parsed.fail_on_data_loss, parsed.poll_timeout_s) == (
        10,
        False,
        2.5,
    )


@pytest.mark.parametrize(
    ("extra", "streaming", "message"),
    [
        ({"kafka.group.id": "g"}, False, "never joins a consumer group"),
        ({"kafka.enable.auto.commit": "true"}, True, "never commits"),
        ({"kafka.auto.offset.reset": "earliest"}, True, "startingOffsets"),
        ({"endingOffsets": "latest"}, True, "batch reads only"),
        ({"maxOffsetsPerTrigger": "5"}, False, "streaming reads only"),
        ({"maxOffsetsPerTrigger": "0"}, True, ">= 1"),
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
        to_arrow_schema(KAFKA_SCHEMA, timezone="UTC"),
        fail_on_data_loss=True,
        poll_timeout_s=2,
    )
    with pytest.raises(
        KafkaReadError, match=r"orders-0: no progress for 2s while reading offset 0 of \[0, 10\)"
    ):
        list(batches)
