"""librdkafka's log lines through Python logging: one line per problem, unless verbose.

Left alone, librdkafka writes every connection attempt to stderr, so an unreachable cluster buried
the one clear error line under hundreds of identical ``Connect to ... failed`` lines. Every client
offsetlake creates gets this module's logger (``logger`` is a confluent-kafka client setting, set by
kafka/clients.py, which also hands the queued lines over: see there); its
filter lets the first line of each distinct problem through and drops repeats, until
``set_verbose(True)`` (``offsetlake --verbose``) lets everything through.

With a logger set, confluent-kafka queues the lines and hands them over only on ``poll()``
(measured with 2.16.1; confluent-kafka-python issue #1734), so kafka/clients.py polls every client
it built once its work is done or has failed.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Final

CLIENT_LOGGER_NAME: Final = "offsetlake.kafka.client"
_CLIENT_NAME = re.compile(r"\[rdkafka#\w+-\d+\]\s*")
_VOLATILE = re.compile(r"\s*\((?:after \d+ms|\d+ identical error).*\)\s*$")


def problem_key(message: str) -> str:
    """The message without what changes between repeats (client instance, timings, repeat counts)."""
    return _VOLATILE.sub("", _CLIENT_NAME.sub("", message))


class OncePerProblem(logging.Filter):
    """Passes the first record of each distinct problem in this process, drops the repeats."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = problem_key(record.getMessage())
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
            return True


client_logger = logging.getLogger(CLIENT_LOGGER_NAME)
_once_per_problem = OncePerProblem()
client_logger.addFilter(_once_per_problem)


def set_verbose(verbose: bool) -> None:
    """Every librdkafka line (``True``) or the first per problem (``False``, the default)."""
    if verbose:
        client_logger.removeFilter(_once_per_problem)
    else:
        client_logger.addFilter(_once_per_problem)
