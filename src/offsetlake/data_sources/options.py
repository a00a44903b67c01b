"""Option parsing every offsetlake data source shares (pure: no Spark, no Kafka client).

Spark hands a Python data source its options with the names as written or lower-cased (depending
on the API and version), so each source looks them up lower-cased (:func:`lower_names`) and names
them as documented in its errors.

The cluster timeout has one name for every source, ``timeoutMs``, and one default,
:data:`DEFAULT_TIMEOUT_MS`, which is also the pipeline's ``offsetlake.cluster.timeout.ms``
default. The records source (``offsetlake_kafka``) keeps Spark's ``kafkaConsumer.pollTimeoutMs``
beside it, and its ``timeoutMs`` defaults to that poll timeout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from offsetlake.contract.settings import DEFAULT_CLUSTER_TIMEOUT_MS
from offsetlake.kafka.offset_ranges import OffsetOptionError

DEFAULT_TIMEOUT_MS: Final = DEFAULT_CLUSTER_TIMEOUT_MS
"""How long one cluster may take to answer a request before it counts as unreachable: the
pipeline's ``offsetlake.cluster.timeout.ms`` default, one number."""
TIMEOUT_OPTION: Final = "timeoutMs"
TARGET_OPTION_PREFIX: Final = "target."
"""Prefix of the target cluster's client options for a source that also reads the target
(``offsetlake_k2k_tracing``: ``target.kafka.bootstrap.servers``, ...)."""

# The names the cluster timeout had before it was one option: rejected with the new name rather
# than silently ignored (Spark passes unknown options through).
_RENAMED_TIMEOUT_OPTIONS: Final = ("metadataTimeoutMs", "requestTimeoutMs")


def lower_names(options: Mapping[str, str]) -> dict[str, str]:
    """The options with lower-cased names (how they are looked up)."""
    return {name.lower(): value for name, value in options.items()}


def require_bootstrap_servers(options: Mapping[str, str]) -> None:
    """``options`` (lower-cased) must name the cluster."""
    if not options.get("kafka.bootstrap.servers"):
        raise OffsetOptionError("option kafka.bootstrap.servers is required")


def parse_bool(value: str, option: str) -> bool:
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise OffsetOptionError(f"{option} must be true or false, not {value!r}")
    return text == "true"


def parse_positive_int(value: str, option: str) -> int:
    try:
        number = int(value)
    except ValueError as error:
        raise OffsetOptionError(f"{option} must be a whole number, not {value!r}") from error
    if number < 1:
        raise OffsetOptionError(f"{option} must be >= 1, not {number}")
    return number


def parse_timeout_s(options: Mapping[str, str], *, default_ms: int = DEFAULT_TIMEOUT_MS) -> float:
    """The cluster timeout in seconds from ``options`` (lower-cased): ``timeoutMs``, a whole number >= 1."""
    for renamed in _RENAMED_TIMEOUT_OPTIONS:
        if renamed.lower() in options:
            raise OffsetOptionError(f"option {renamed} is now {TIMEOUT_OPTION}")
    return parse_positive_int(options.get(TIMEOUT_OPTION.lower(), str(default_ms)), TIMEOUT_OPTION) / 1000


def parse_on_unreachable(options: Mapping[str, str]) -> bool:
    """onUnreachable: ``fail`` (default, as Spark's reader) or ``skip`` (True)."""
    value = options.get("onunreachable", "fail").strip().lower()
    if value not in ("fail", "skip"):
        raise OffsetOptionError(f"onUnreachable must be fail or skip, not {value!r}")
    return value == "skip"
