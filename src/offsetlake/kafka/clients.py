"""Every Kafka client offsetlake uses is built here, as Kafka's ``MirrorUtils`` builds MM2's.

One place decides what every client gets: offsetlake's logger (librdkafka's lines through Python
logging, once per problem: ``client_logging``), and a flush of that logger's queue when the work is
done or has failed. confluent-kafka hands queued log lines over only on ``poll()``; an AdminClient
is never polled by its calls and a Consumer or Producer only while polled, so a client built
anywhere else would swallow the very lines that say why a cluster did not answer.

``admin``/``consumer``/``producer`` are context managers (the usual case: one piece of work);
``new_admin`` is for a client a caller keeps (a data-source reader's), which then calls
:func:`flush_logs` itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from offsetlake.kafka.client_logging import client_logger

READER_GROUP_ID = "offsetlake-reader"
"""librdkafka requires a group.id for a Consumer; offsetlake's consumers only assign, never join or commit."""


def client_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` for a confluent-kafka client that logs through offsetlake's client logger."""
    return {**config, "logger": client_logger}


def new_admin(config: Mapping[str, Any]) -> AdminClient:
    """An AdminClient the caller keeps; it calls :func:`flush_logs` once its work is done."""
    return AdminClient(client_config(config))


def flush_logs(client: AdminClient | Consumer | Producer) -> None:
    """Hand the client's queued log lines to the client logger (see the module docstring)."""
    client.poll(0)


@contextmanager
def admin(config: Mapping[str, Any]) -> Iterator[AdminClient]:
    """An AdminClient for one piece of work; its log lines are flushed however the work ends."""
    client = new_admin(config)
    try:
        yield client
    finally:
        flush_logs(client)


@contextmanager
def consumer(config: Mapping[str, Any]) -> Iterator[Consumer]:
    """An assign-only Consumer (never commits); closed, its log lines flushed, however the work ends."""
    client = Consumer(client_config({"group.id": READER_GROUP_ID, "enable.auto.commit": False, **config}))
    try:
        yield client
    finally:
        try:
            flush_logs(client)  # a record it may return is dropped: nothing is ever committed
        finally:
            client.close()


@contextmanager
def producer(config: Mapping[str, Any]) -> Iterator[Producer]:
    """A Producer for one piece of work; its log lines (and delivery reports) are served on exit."""
    client = Producer(client_config(config))
    try:
        yield client
    finally:
        flush_logs(client)
