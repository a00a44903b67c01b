"""Flag value parsers for argparse: each turns text into a typed value or an ArgumentTypeError.

A bad value is refused by argparse itself, before Spark or Kafka is touched (exit 2, one line).
"""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from offsetlake import durations
from offsetlake.errors import InvalidValueError
from offsetlake.kafka.secrets import PROPERTIES_ENV
from offsetlake.mirror import precedence
from offsetlake.mirror.clusters import ClusterEndpoint, parse_endpoint


def parse_duration(text: str) -> timedelta | None:
    """``15m``, ``2h``, ``1d``, ``90s`` (offsetlake.durations); ``none`` switches the age guard off."""
    if text.strip().lower() == "none":
        return None
    try:
        return durations.parse_duration(text)
    except InvalidValueError:
        raise argparse.ArgumentTypeError(
            f"expected a duration like 15m, 2h, 1d or none, got {text!r}"
        ) from None


def parse_timestamp(text: str) -> datetime:
    """ISO 8601; a time without a zone is taken as UTC."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected an ISO 8601 timestamp, got {text!r}") from error
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def parse_optional_timestamp(text: str) -> datetime | None:
    """As parse_timestamp; empty or ``none`` is no time (a job parameter left at its default)."""
    return None if text.strip().lower() in ("", "none") else parse_timestamp(text)


def parse_bool(text: str) -> bool:
    """``true``/``false`` (any case), for flags a job parameter sets as ``--flag=VALUE``."""
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return lowered == "true"


def parse_method_precedence(text: str) -> tuple[str, ...]:
    """Methods in any order, each at most once; the unlisted follow in the default order."""
    try:
        return precedence.parse_method_precedence(text)
    except InvalidValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def parse_regex(text: str) -> str:
    """A regex that must match whole names; compiled now, and never empty (an empty pattern would
    silently mean "no filter" for an exclude flag)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty pattern is not allowed: leave the flag out instead")
    try:
        re.compile(text)
    except re.error as error:
        raise argparse.ArgumentTypeError(f"invalid regex {text!r}: {error}") from None
    return text


def parse_source(text: str) -> ClusterEndpoint:
    try:
        return parse_endpoint(text)
    except InvalidValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parse_fraction(text: str) -> float | None:
    """A fraction in (0, 1], or ``none``."""
    if text.strip().lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.5, or none; got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1, got {text!r}")
    return value


def parse_positive_seconds(text: str) -> float:
    """Seconds, finite and above zero (``nan``, ``inf`` and ``-1`` are refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number of seconds, got {text!r}")
    return value


def add_cluster_options(parser: argparse.ArgumentParser, *, sources: bool) -> None:
    """--target / --source / --kafka-properties; without them, the local clusters (make up)."""
    parser.add_argument(
        "--target",
        "--target-bootstrap-servers",
        dest="target_bootstrap_servers",
        metavar="BOOTSTRAP",
        help="the target cluster's bootstrap servers (default: kafka.bootstrap.servers from the secret "
        "scope, else the local target cluster)",
    )
    if sources:
        parser.add_argument(
            "--target-alias",
            help="MM2's alias of the target cluster (names the offset-syncs topic on each source)",
        )
        parser.add_argument(
            "--source",
            dest="sources",
            action="append",
            type=parse_source,
            metavar="ALIAS=BOOTSTRAP",
            help="a source cluster by its MM2 alias (repeat for several; default: the local source)",
        )
    parser.add_argument(
        "--kafka-properties",
        type=Path,
        metavar="FILE",
        help="Kafka client settings (SASL/SSL) for every cluster, as a Java properties file "
        f"(default: ${PROPERTIES_ENV}); values are never printed",
    )
