"""Failback's pure decisions: which way a topic goes back, and a run's status."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from offsetlake.apply.k2k_search import K2KTracing
from offsetlake.apply.planner import Untranslated
from offsetlake.apply.run import ApplyRequest, ApplyResult, ApplyStatus
from offsetlake.failback.run import (
    FailbackRequest,
    FailbackResult,
    PartitionPath,
    Route,
    _refused_groups,
    _untranslated,
    _upstream_topic,
)
from offsetlake.k2k.routing import TracingRoute
from offsetlake.mirror.policy import ReplicationPolicy


def request(template: str | None = None, policy: str = "default") -> FailbackRequest:
    tracing = K2KTracing((TracingRoute("primary", template),)) if template else None
    return FailbackRequest(
        apply=ApplyRequest(dry_run=True),
        source_alias="primary",
        source_config={},
        target_alias="dr",
        target_config={},
        policy=ReplicationPolicy(kind=policy),  # type: ignore[arg-type]
        tracing=tracing,
    )


@pytest.mark.parametrize(
    ("template", "policy", "topic", "upstream"),
    [
        (None, "default", "primary.orders", "orders"),  # MM2's name: replicated
        (None, "default", "payments", None),  # the target's own topic: the reverse flow
        (None, "default", "other.orders", None),  # another source's: not this failback's
        ("eu.{topic}.copy", "default", "eu.orders.copy", "orders"),  # K2K's route, inverted
        ("eu.{topic}.copy", "default", "payments", None),
        ("{topic}", "identity", "orders", None),  # a bare {topic} would claim every topic
        ("all-orders", "identity", "all-orders", None),  # one static topic: the source is not told
    ],
)
def test_a_topic_goes_back_by_its_forward_name_or_is_the_targets_own(
    template: str | None, policy: str, topic: str, upstream: str | None
) -> None:
    assert _upstream_topic(request(template, policy), topic) == upstream


def path(group: str, resume: int | None) -> PartitionPath:
    return PartitionPath(group, "primary.orders", 0, 5, Route.FORWARD_HISTORY, "orders", resume)


def test_an_untranslated_partition_refuses_its_whole_group_or_goes_to_the_log_start() -> None:
    refuse = replace(request(), untranslated=Untranslated.REFUSE)
    placed = _untranslated(refuse, path("g", None), "no offset sync")
    assert placed.resume_at is None and "group refused" in placed.reason
    assert _refused_groups([placed, path("g", 7), path("h", 3)], Untranslated.REFUSE) == {"g"}

    log_start = replace(refuse, untranslated=Untranslated.EARLIEST)
    placed = _untranslated(log_start, path("g", None), "no offset sync")
    assert placed.resume_at == 0 and placed.method == "log_start (untranslated)"
    assert _refused_groups([placed], Untranslated.EARLIEST) == set()


def applied(status: ApplyStatus, gold_rows: int) -> ApplyResult:
    started = datetime(2026, 11, 28, tzinfo=UTC)
    return ApplyResult(ApplyRequest(dry_run=False), "run", status, "t", "a", started, gold_rows=gold_rows)


@pytest.mark.parametrize(
    ("status", "gold_rows", "refused", "expected"),
    [
        (ApplyStatus.OK, 3, (), ApplyStatus.OK),
        (ApplyStatus.OK, 3, ("g",), ApplyStatus.REFUSED),  # the others moved, one group left
        (ApplyStatus.FAILED, 0, ("g",), ApplyStatus.REFUSED),  # every group refused: nothing to apply
        (ApplyStatus.FAILED, 0, (), ApplyStatus.FAILED),  # no position on the target at all
        (ApplyStatus.FAILED, 3, ("g",), ApplyStatus.FAILED),  # a failed alter stays a failure
    ],
)
def test_refused_groups_make_the_run_refused_unless_it_failed(
    status: ApplyStatus, gold_rows: int, refused: tuple[str, ...], expected: ApplyStatus
) -> None:
    assert FailbackResult(applied(status, gold_rows), (), refused).status is expected
