"""librdkafka's log lines reach Python logging once per problem, every one when verbose."""

from __future__ import annotations

import logging
import socket

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from offsetlake.kafka.client_logging import (
    CLIENT_LOGGER_NAME,
    flush_client_logs,
    problem_key,
    set_verbose,
    with_client_logger,
)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def connection_errors(caplog: pytest.LogCaptureFixture, *, verbose: bool) -> list[str]:
    """Log lines one AdminClient writes while failing to reach a closed port for two seconds."""
    set_verbose(verbose)
    caplog.clear()
    try:
        with caplog.at_level(logging.DEBUG, logger=CLIENT_LOGGER_NAME):
            admin = AdminClient(with_client_logger({"bootstrap.servers": f"127.0.0.1:{closed_port()}"}))
            with pytest.raises(KafkaException):
                admin.list_topics(timeout=2)
            flush_client_logs(admin)
    finally:
        set_verbose(False)
    return [record.getMessage() for record in caplog.records if record.name == CLIENT_LOGGER_NAME]


def test_an_unreachable_cluster_is_one_line_unless_verbose(caplog: pytest.LogCaptureFixture) -> None:
    quiet = connection_errors(caplog, verbose=False)
    assert len(quiet) == 1, quiet
    assert "Connection refused" in quiet[0]
    verbose = connection_errors(caplog, verbose=True)
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
