"""Reading the target's groups: a failed describe must not keep the client alive.

The executor drops a client whose request went unanswered so that no late answer reaches it
(librdkafka issue #4605 aborts the process). An error raised straight from the dict that holds it
ties the dict, the error's traceback and the raising frame (which holds the client) in a reference
cycle, and the client lives until the garbage collector runs: after a paused target came back, the
process aborted (benchmarks/README.md, issue 50). Checked with the collector off, by a weak
reference to a stand-in client.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterable, Iterator

import pytest

from offsetlake.apply.target_state import read_groups
from offsetlake.kafka import admin as kafka_admin
from offsetlake.kafka.admin import ClusterUnresponsiveError, KafkaAdminError


class StandInClient:
    """What read_groups passes to describe_groups; only its lifetime matters here."""


def unanswered(
    admin: StandInClient, groups: Iterable[str], *, timeout_s: float
) -> tuple[dict[str, kafka_admin.GroupDescription], dict[str, KafkaAdminError]]:
    return {}, {
        group: ClusterUnresponsiveError(f"cannot describe group {group}: timed out") for group in groups
    }


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.usefixtures("collector_off")
def test_a_describe_that_went_unanswered_is_raised_without_keeping_the_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(kafka_admin, "describe_groups", unanswered)
    client = StandInClient()
    alive = weakref.ref(client)
    with pytest.raises(ClusterUnresponsiveError, match="cannot describe group a: timed out"):
        read_groups(client, ["b", "a"], timeout_s=1.0)  # type: ignore[arg-type]
    del client
    assert alive() is None  # freed by reference counting: nothing but the caller held it
