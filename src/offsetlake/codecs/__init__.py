"""Pure-Python codecs for what replicators write into Kafka (no Spark, no Kafka client)."""

from __future__ import annotations

from offsetlake.errors import ExternalError


class CodecError(ExternalError, ValueError):
    """A record's bytes do not match the expected wire format; the message says what and where."""
