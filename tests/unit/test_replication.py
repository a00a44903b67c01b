"""ReplicationPolicy mirrors Kafka's DefaultReplicationPolicy / IdentityReplicationPolicy naming."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from offsetlake.mirror.policy import ReplicationPolicy

DEFAULT = ReplicationPolicy()
IDENTITY = ReplicationPolicy(kind="identity")
SEPARATORS = st.sampled_from([".", "_", "__", "-", "+", "|", "::", "*"])
NAME = st.text(alphabet="abcxyz019-_.", min_size=1, max_size=12)


def test_default_policy_names_remote_topics_after_the_source() -> None:
    assert DEFAULT.format_remote_topic("us-east", "orders") == "us-east.orders"
    assert DEFAULT.topic_source("us-east.orders") == "us-east"
    assert DEFAULT.upstream_topic("us-east.orders") == "orders"
    assert DEFAULT.upstream_topic("us-west.us-east.orders") == "us-east.orders"
    assert DEFAULT.original_topic("us-west.us-east.orders") == "orders"
    assert DEFAULT.topic_source("orders") is None
    assert DEFAULT.upstream_topic("orders") is None
    assert DEFAULT.original_topic("orders") == "orders"


@pytest.mark.parametrize(
    ("topic", "source"),
    [
        ("orders.", None),  # Java's split drops trailing empty parts
        ("a..", None),
        (".orders", ""),  # but keeps a leading empty part
        ("a..b", "a"),
    ],
)
def test_topic_source_follows_java_string_split(topic: str, source: str | None) -> None:
    assert DEFAULT.topic_source(topic) == source


def test_custom_separator_applies_to_remote_and_internal_topics() -> None:
    policy = ReplicationPolicy(separator="__")
    assert policy.format_remote_topic("src", "orders") == "src__orders"
    assert policy.topic_source("src__orders.v1") == "src"
    assert policy.upstream_topic("src__orders.v1") == "orders.v1"
    assert policy.checkpoints_topic("src") == "src__checkpoints__internal"
    assert policy.offset_syncs_topic("tgt") == "mm2-offset-syncs__tgt__internal"


def test_internal_separator_can_be_disabled_like_kafka_15102() -> None:
    policy = ReplicationPolicy(separator="_", internal_separator_enabled=False)
    assert policy.format_remote_topic("src", "orders") == "src_orders"
    assert policy.checkpoints_topic("src") == "src.checkpoints.internal"
    assert policy.offset_syncs_topic("tgt") == "mm2-offset-syncs.tgt.internal"
    assert re.fullmatch(policy.checkpoints_topic_pattern(), "src.checkpoints.internal")


def test_default_internal_topic_names() -> None:
    assert DEFAULT.checkpoints_topic("us-east") == "us-east.checkpoints.internal"
    assert DEFAULT.offset_syncs_topic("us-west") == "mm2-offset-syncs.us-west.internal"


def test_downstream_topic_renames_like_mirror_checkpoint_task() -> None:
    assert DEFAULT.downstream_topic("us-east", "us-west", "orders") == "us-east.orders"
    # failback: the topic came from the target cluster, so it returns to its original name
    assert DEFAULT.downstream_topic("us-east", "us-west", "us-west.orders") == "orders"
    # Kafka uses originalTopic(): every hop's prefix is removed, not just the first
    assert DEFAULT.downstream_topic("us-east", "us-west", "us-west.eu.orders") == "orders"
    # a topic from a third cluster is simply prefixed again
    assert DEFAULT.downstream_topic("us-east", "us-west", "eu.orders") == "us-east.eu.orders"


def test_identity_policy_keeps_names_except_heartbeats() -> None:
    assert IDENTITY.format_remote_topic("us-east", "orders") == "orders"
    assert IDENTITY.topic_source("us-east.orders") is None
    assert IDENTITY.upstream_topic("us-east.orders") == "us-east.orders"
    assert IDENTITY.original_topic("orders") == "orders"
    assert IDENTITY.downstream_topic("us-east", "us-west", "us-west.orders") == "us-west.orders"
    assert IDENTITY.format_remote_topic("us-east", "heartbeats") == "us-east.heartbeats"
    assert IDENTITY.topic_source("us-east.heartbeats") == "us-east"
    assert IDENTITY.upstream_topic("us-east.heartbeats") == "heartbeats"
    assert IDENTITY.checkpoints_topic("us-east") == "us-east.checkpoints.internal"


@given(alias=NAME, topic=NAME, separator=SEPARATORS)
def test_remote_topic_names_decompose_back(alias: str, topic: str, separator: str) -> None:
    # Java splits at the leftmost separator, so an alias containing separator characters is ambiguous.
    assume(not set(separator) & set(alias) and topic.replace(separator, ""))
    policy = ReplicationPolicy(separator=separator)
    remote = policy.format_remote_topic(alias, topic)
    assert policy.topic_source(remote) == alias
    assert policy.upstream_topic(remote) == topic


@given(alias=NAME, separator=SEPARATORS, internal_enabled=st.booleans())
def test_internal_topic_patterns_capture_the_alias(
    alias: str, separator: str, internal_enabled: bool
) -> None:
    policy = ReplicationPolicy(separator=separator, internal_separator_enabled=internal_enabled)
    checkpoints = re.fullmatch(policy.checkpoints_topic_pattern(), policy.checkpoints_topic(alias))
    offset_syncs = re.fullmatch(policy.offset_syncs_topic_pattern(), policy.offset_syncs_topic(alias))
    assert checkpoints is not None and checkpoints.group(1) == alias
    assert offset_syncs is not None and offset_syncs.group(1) == alias


@pytest.mark.parametrize("separator", [".", "+", "|", "*"])
def test_patterns_escape_the_separator(separator: str) -> None:
    policy = ReplicationPolicy(separator=separator)
    assert re.compile(policy.checkpoints_topic_pattern()).groups == 1
    assert not re.fullmatch(policy.checkpoints_topic_pattern(), "src~checkpoints~internal")
    assert not re.fullmatch(policy.offset_syncs_topic_pattern(), "mm2-offset-syncs~tgt~internal")
    assert not re.fullmatch(policy.checkpoints_topic_pattern(), "orders")


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ReplicationPolicy(separator=""), "replication policy separator must be a non-empty string"),
        (lambda: ReplicationPolicy(kind="prefix"), "unknown replication policy 'prefix'; expected one of"),  # type: ignore[arg-type]
        (
            lambda: DEFAULT.format_remote_topic("", "orders"),
            "source cluster alias must be a non-empty string",
        ),
        (lambda: DEFAULT.checkpoints_topic(""), "source cluster alias must be a non-empty string"),
        (lambda: DEFAULT.offset_syncs_topic(""), "cluster alias must be a non-empty string"),
        (
            lambda: DEFAULT.downstream_topic("a", "", "orders"),
            "target cluster alias must be a non-empty string",
        ),
        (lambda: DEFAULT.topic_source(""), "topic must be a non-empty string"),
    ],
)
def test_invalid_names_are_rejected_clearly(build: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        build()
    assert message in str(caught.value)
