"""A refresh interrupted between bronze and gold, then a failover that does not refresh.

Issue 31: MM2 writes a rewind checkpoint for a known group and a first checkpoint for a new group;
a ``pipeline run`` is interrupted (SIGTERM, or SIGKILL of its whole process group, which leaves
the gold update marker behind) once ``bronze_checkpoints`` has completed, so bronze holds records
gold has not seen. The next ``failover --refresh never`` (target only; the source is down) must
commit exactly what a full update's ``latest_offsets`` then gives, for every group-partition.
The kill follows bronze's COMPLETED line; if gold's flows finished first, the claim is the same.
Shares the scenario of ``test_failover`` (its ``outage`` fixture, a private pair per module).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from offsetlake.codecs.mm2 import Checkpoint
from offsetlake.local.home import HOME_ENV
from tests.e2e.test_failover import (
    GROUPS,
    PARTITIONS,
    Outage,
    _key,
    _placed_but_the_never_replicated_topic,
    _processes_using,
    _write_checkpoint,
    outage,  # noqa: F401 (the module-scoped fixture, one private pair for this module)
)
from tests.kafka_helpers import committed_offsets

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

INTERRUPT_TIMEOUT_S = 600
"""Generous: a busy 2-core machine must not fail a test whose interrupted run was merely slow."""


@pytest.fixture(scope="module")
def refreshed(outage: Outage) -> Iterator[Outage]:  # noqa: F811
    """The first full refresh with both clusters up; the source is down for everything after it."""
    first = outage.cli("pipeline", "run", *outage.cluster_flags())
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-4000:]
    assert outage.rows("latest_offsets")
    with outage.source_paused():
        yield outage


def test_failover_after_a_sigterm_between_bronze_and_gold_commits_what_latest_offsets_gives(
    refreshed: Outage,
) -> None:
    written = _rewind_and_add_a_group(refreshed, GROUPS[1], "app-new-1")
    output = _interrupt_after_bronze_checkpoints(refreshed, signal.SIGTERM)
    assert "interrupted by SIGTERM" in output or "Run is COMPLETED" in output, output[-4000:]
    _failover_commits_what_a_full_update_gives(refreshed, written)


def test_failover_after_a_sigkill_between_bronze_and_gold_commits_what_latest_offsets_gives(
    refreshed: Outage,
) -> None:
    written = _rewind_and_add_a_group(refreshed, GROUPS[2], "app-new-2")
    _interrupt_after_bronze_checkpoints(refreshed, signal.SIGKILL)
    _failover_commits_what_a_full_update_gives(refreshed, written)


def _rewind_and_add_a_group(scenario: Outage, group: str, new_group: str) -> dict[tuple[str, str, int], int]:
    """As MM2 would: the group's source offsets went back 5 records; a group never seen before.
    Returns the downstream offset of each checkpoint written."""
    written = {}
    for partition in range(PARTITIONS):
        old = scenario.checkpoints[(group, scenario.remote_topic, partition)]
        rewound = Checkpoint(
            group, old.topic, partition, old.upstream_offset - 5, old.downstream_offset - 5, ""
        )
        _write_checkpoint(scenario, rewound)
        scenario.checkpoints[(group, scenario.remote_topic, partition)] = rewound
        first = Checkpoint(new_group, old.topic, partition, old.upstream_offset, old.downstream_offset, "")
        _write_checkpoint(scenario, first)
        scenario.checkpoints[(new_group, scenario.remote_topic, partition)] = first
        written[(group, rewound.topic, partition)] = rewound.downstream_offset
        written[(new_group, first.topic, partition)] = first.downstream_offset
    return written


def _interrupt_after_bronze_checkpoints(scenario: Outage, signum: signal.Signals) -> str:
    """Starts ``pipeline run`` in its own session; sends ``signum`` (SIGKILL: to the whole process
    group, as an OOM kill or a power cut would) as soon as bronze_checkpoints reports COMPLETED."""
    process = subprocess.Popen(
        [sys.executable, "-m", "offsetlake.cli", "pipeline", "run", *scenario.cluster_flags()],
        env={**os.environ, HOME_ENV: str(scenario.home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        for line in process.stdout:
            lines.append(line)
            if "bronze_checkpoints" in line and "COMPLETED" in line:
                break
        assert any("bronze_checkpoints" in line and "COMPLETED" in line for line in lines), "".join(lines)
        if signum == signal.SIGKILL:
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.send_signal(signum)
        rest, _ = process.communicate(timeout=INTERRUPT_TIMEOUT_S)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    output = "".join(lines) + rest
    if signum == signal.SIGTERM:
        assert process.returncode in (0, 128 + signal.SIGTERM), output[-4000:]
    deadline = time.monotonic() + INTERRUPT_TIMEOUT_S
    while _processes_using(scenario.home) and time.monotonic() < deadline:
        time.sleep(1)
    assert _processes_using(scenario.home) == []
    return output


def _failover_commits_what_a_full_update_gives(
    scenario: Outage, written: dict[tuple[str, str, int], int]
) -> None:
    failover = scenario.cli("failover", "--target", scenario.target, "--refresh", "never", "--allow-rewind")
    report = failover.stdout + failover.stderr
    _placed_but_the_never_replicated_topic(failover)  # app-0's snapshot names it
    expected = _checkpointed_groups(scenario)
    committed = {
        (group, topic, partition): committed_offsets(scenario.target, group, [(topic, partition)]).get(
            (topic, partition)
        )
        for (group, topic, partition) in expected
    }

    full = scenario.cli("pipeline", "run", *scenario.cluster_flags())
    assert full.returncode == 0, full.stdout[-4000:] + full.stderr[-4000:]
    latest = {_key(row)[1:]: row["downstream_offset"] for row in scenario.rows("latest_offsets")}
    assert set(expected) <= set(latest), sorted(set(expected) - set(latest))
    assert committed == {key: latest[key] for key in expected}, report[-4000:]
    # ... and, the source being down, the checkpoints just written are what that is (the rewind,
    # the new group); elsewhere an offset sync from the refresh with the source up may be fresher.
    assert {key: committed[key] for key in written} == written


def _checkpointed_groups(scenario: Outage) -> list[tuple[str, str, int]]:
    """Every group-partition MM2 checkpointed on the target (the groups the failover applies)."""
    return sorted(scenario.checkpoints)
