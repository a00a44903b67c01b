"""The read-to-end primitive on a real broker: partitions end at partition EOF or at their given end,
whichever comes first (a multi-record last batch included: Tansu's ListOffsets "latest" is wrong
then, the fetch's end is not), and a partition that cannot be read ends with its own typed result
while the others are read whole."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import OFFSET_BEGINNING

from offsetlake.kafka import clients
from offsetlake.kafka.read_to_end import PartitionToRead, ReadOutcome, ReadToEnd, reader_consumer_config
from tests.kafka_helpers import create_topic, produce

pytestmark = pytest.mark.kafka


def test_each_partition_ends_at_eof_or_its_end_and_one_that_cannot_be_read_ends_alone(
    target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("read-to-end")
    create_topic(target_bootstrap, topic, partitions=3)
    batched = produce(target_bootstrap, topic, [(b"k%d" % n, b"v") for n in range(5)], 0, one_per_batch=False)
    produce(target_bootstrap, topic, [(b"k%d" % n, b"v") for n in range(4)], 1)
    wanted = [
        PartitionToRead(topic, 0, OFFSET_BEGINNING),  # to EOF, its last batch holding five records
        PartitionToRead(topic, 1, 1, end=3),  # from 1 to the given end, before the log's
        PartitionToRead(topic, 2, OFFSET_BEGINNING),  # empty: EOF at once
        PartitionToRead(topic, 7, 0),  # no such partition
    ]
    config = reader_consumer_config({"bootstrap.servers": target_bootstrap}, fail_on_data_loss=True)

    with clients.consumer(config) as consumer:
        read = ReadToEnd(consumer, wanted, timeout_s=3)
        delivered = [(message.partition(), message.offset()) for batch in read for message in batch]

    assert sorted(delivered) == [(0, offset) for offset in batched] + [(1, 1), (1, 2)]
    first, second, empty, missing = read.results
    assert (first.outcome, first.records, first.log_end, first.position) == (ReadOutcome.END, 5, 5, 5)
    assert (second.outcome, second.records, second.log_end, second.position) == (ReadOutcome.END, 2, None, 3)
    assert (empty.outcome, empty.records, empty.position) == (ReadOutcome.END, 0, 0)
    assert missing.outcome is not ReadOutcome.END and missing.records == 0
