"""The target read in two parts on a real broker: the groups read ahead (beside the checkpoint tail and
the sources' reads), then completed by the plan's read, gives the plan what one whole read gives it,
with the logs read at completion."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from offsetlake.apply.target_state import read_target_groups, read_target_state
from offsetlake.kafka import clients
from offsetlake.mirror.positions import CommittedOffset
from tests.kafka_helpers import commit_offsets, create_topic, produce

TIMEOUT_S = 30.0


@pytest.mark.kafka
def test_groups_read_ahead_then_completed_are_the_whole_read(
    target_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    orders, missing = unique_name("orders"), unique_name("never-created")
    create_topic(target_bootstrap, orders, partitions=2)
    produce(target_bootstrap, orders, [(None, b"x")] * 3, partition=0)
    app, billing, late = unique_name("app"), unique_name("billing"), unique_name("late")
    commit_offsets(target_bootstrap, app, {(orders, 0): 2})
    commit_offsets(target_bootstrap, billing, {(orders, 0): 1, (orders, 1): 0})
    ahead_keys = {(app, orders, 0), (billing, orders, 0), (app, missing, 0)}

    with clients.admin({"bootstrap.servers": target_bootstrap}) as admin:
        ahead = read_target_groups(admin, ahead_keys, timeout_s=TIMEOUT_S)
        # What the tail and the sources' reads add meanwhile: a partition of a group read ahead, a
        # new group, and records past the logs' ends as they were.
        commit_offsets(target_bootstrap, late, {(orders, 1): 0})
        produce(target_bootstrap, orders, [(None, b"y")] * 2, partition=0)
        keys = ahead_keys | {(app, orders, 1), (billing, orders, 1), (late, orders, 1)}
        completed = read_target_state(admin, keys, timeout_s=TIMEOUT_S, read_before=ahead)
        whole = read_target_state(admin, keys, timeout_s=TIMEOUT_S)

    assert ahead.read == {(app, orders, 0), (billing, orders, 0)}  # no partition of a missing topic
    assert completed == whole
    assert completed.log_bounds[(orders, 0)].log_end == 5  # the logs are read at completion
    assert {group: dict(described.committed) for group, described in completed.groups.items()} == {
        app: {(orders, 0): CommittedOffset(2)},
        billing: {(orders, 0): CommittedOffset(1), (orders, 1): CommittedOffset(0)},
        late: {(orders, 1): CommittedOffset(0)},
    }
