"""librdkafka's log lines reach Python logging once per problem, every one when verbose, from
every kind of client kafka/clients.py builds."""

from __future__ import annotations

import logging
import socket

import pytest
from confluent_kafka import KafkaException

from offsetlake.kafka import clients
from offsetlake.kafka.client_logging import CLIENT_LOGGER_NAME, problem_key, set_verbose


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def connection_errors(caplog: pytest.LogCaptureFixture, kind: str, *, verbose: bool) -> list[str]:
    """Log lines one client of ``kind`` writes while failing to reach a closed port for two
    seconds; nothing but the factory's exit hands them over (the failing call never polls)."""
    set_verbose(verbose)
    caplog.clear()
    build = {"admin": clients.admin, "consumer": clients.consumer, "producer": clients.producer}[kind]
    closed = {"bootstrap.servers": f"127.0.0.1:{closed_port()}"}
    try:
        with (
            caplog.at_level(logging.DEBUG, logger=CLIENT_LOGGER_NAME),
            pytest.raises(KafkaException),
            build(closed) as client,
        ):
            client.list_topics(timeout=2)
    finally:
        set_verbose(False)
    return [record.getMessage() for record in caplog.records if record.name == CLIENT_LOGGER_NAME]


@pytest.mark.parametrize("kind", ["admin", "consumer", "producer"])
def test_an_unreachable_cluster_is_one_line_unless_verbose(
    caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    quiet = connection_errors(caplog, kind, verbose=False)
    assert len(quiet) == 1, quiet
    assert "Connection refused" in quiet[0]
    verbose = connection_errors(caplog, kind, verbose=True)
    assert len(verbose) > 5, verbose  # librdkafka retries every ~50 ms


def test_repeats_differ_only_in_client_name_and_timings() -> None:
    first = (
        "FAIL [rdkafka#producer-1] [thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/bootstrap: Connect to "
        "ipv4#127.0.0.1:1 failed: Connection refused (after 0ms in state CONNECT)"
    )
    repeat = first.replace("producer-1", "producer-7").replace(
        "(after 0ms in state CONNECT)", "(after 3ms in state CONNECT, 4 identical error(s) suppressed)"
    )
    other_broker = first.replace("127.0.0.1:1", "127.0.0.1:2")
    assert problem_key(first) == problem_key(repeat)
    assert problem_key(first) != problem_key(other_broker)
