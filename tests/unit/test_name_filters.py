"""MM2's include/exclude name filters (offsetlake.mirror.filters): pure, no Kafka, no Spark."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from offsetlake.errors import InvalidValueError
from offsetlake.mirror.filters import (
    DEFAULT_GROUPS_EXCLUDE,
    NameFilter,
    group_filter,
    join_patterns,
    topic_filter,
)


def test_a_name_must_match_the_whole_regex_not_just_contain_it() -> None:
    orders = NameFilter.compile("orders", None)
    assert orders.matches("orders")
    assert not orders.matches("orders-eu")  # a search (or a prefix match) would take it
    assert not orders.matches("old-orders")
    assert NameFilter.compile("orders.*", "orders-audit").select(
        ["orders-audit", "orders", "xorders", "orders-eu", "orders"]
    ) == ["orders", "orders-eu"]  # each once, sorted


def test_an_exclude_must_match_the_whole_name_too() -> None:
    keep_all_but_audit = NameFilter.compile(".*", "audit")
    assert not keep_all_but_audit.matches("audit")
    assert keep_all_but_audit.matches("audit-2024")
    assert keep_all_but_audit.matches("billing-audit")


def test_an_alternation_must_match_the_whole_name_with_either_branch() -> None:
    """Python's re.fullmatch backtracks into the second branch, as Java's matches() does."""
    assert NameFilter.compile("a|ab", None).matches("ab")


def test_an_empty_or_missing_exclude_excludes_nothing() -> None:
    assert NameFilter.compile(".*", "").matches("__consumer_offsets")
    assert group_filter(".*", None).matches("console-consumer-1")


def test_the_default_group_filter_leaves_out_console_consumers_connect_and_internal_groups() -> None:
    assert DEFAULT_GROUPS_EXCLUDE == "console-consumer-.*|connect-.*|__.*"  # MM2's DefaultGroupFilter
    groups = ["orders", "console-consumer-4242", "connect-sink", "__internal", "my-connect-app", "x__y"]
    assert group_filter().select(groups) == ["my-connect-app", "orders", "x__y"]


def test_the_default_topic_filter_leaves_out_internal_and_replica_topics() -> None:
    topics = ["orders", "mm2-offsets.a.internal", "orders.replica", "__consumer_offsets", "internal-orders"]
    assert topic_filter().select(topics) == ["internal-orders", "orders"]


@pytest.mark.parametrize(
    ("make", "option"),
    [
        (lambda: group_filter("(", None), "groups.include"),
        (lambda: group_filter(".*", "["), "groups.exclude"),
        (lambda: topic_filter("*", ""), "topics.include"),
        (lambda: topic_filter(".*", "a(b"), "topics.exclude"),
        (
            lambda: NameFilter.compile(".*", "(", exclude_option="offsetlake.x.exclude"),
            "offsetlake.x.exclude",
        ),
    ],
)
def test_an_invalid_regex_fails_when_the_filter_is_built_naming_its_option(
    make: Callable[[], NameFilter], option: str
) -> None:
    with pytest.raises(InvalidValueError, match=f"^{re.escape(option)} .* is not a valid regex"):
        make()


def test_a_list_of_patterns_is_one_regex_as_mm2_compiles_it() -> None:
    joined = NameFilter.compile(".*", join_patterns(["console-consumer-.*", "connect-.*"]))
    assert joined.select(["connect-x", "console-consumer-1", "orders"]) == ["orders"]
    assert join_patterns([]) == ""
