"""A Kafka cluster as MM2 names it (``clusters = A, B``; ``A.bootstrap.servers = ...``): one type for
every layer (the pipeline's sources, the command line's ``--source``, the local clusters file) and
the one ``alias=bootstrap`` parser."""

from __future__ import annotations

from dataclasses import dataclass

from offsetlake.errors import InvalidValueError


@dataclass(frozen=True)
class ClusterEndpoint:
    """A cluster by its MM2 alias (the topic-name prefix; the cluster's name locally) and how to reach it."""

    alias: str
    bootstrap_servers: str


def parse_endpoint(text: str) -> ClusterEndpoint:
    """``ALIAS=host:port[,host:port]``, both sides stripped and neither empty."""
    alias, sep, bootstrap = text.partition("=")
    if not sep or not alias.strip() or not bootstrap.strip():
        raise InvalidValueError(f"expected ALIAS=BOOTSTRAP (e.g. primary=broker1:9092), got {text!r}")
    return ClusterEndpoint(alias.strip(), bootstrap.strip())
