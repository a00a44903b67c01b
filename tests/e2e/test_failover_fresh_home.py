"""A healthy failover that refreshes (``--refresh always``) and works the first time: both clusters
up, a home no pipeline update has run on. (Without ``always`` a healthy failover reads the sources
itself and runs no update: tests/e2e/test_failover_live_sources.py.)

Issue 31: the failover's refresh selection on a fresh home failed its own quarantine flow ("key not
found": quarantine reads ``decoded_connect_offsets``, outside the selection and never created), was
retried six times with back-off over minutes, and left no ``replication_progress``. On a home that
lacks a table of the graph the refresh is now a full update; the next failover, on a home that has
them all, refreshes only the selection. Each failover's report, with its time by phase, is printed
(``-s``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.e2e.replicated_pair import GROUPS, PARTITIONS, TOPIC, Pair, replicated_pair

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

REFRESH_TIMEOUT_S = 800
"""Generous: a busy 2-core machine (measured: a load of 30) must not fail a refresh that completes."""
COMMAND_TIMEOUT_S = 900


def _cli(pair: Pair, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "offsetlake.cli", *args, *pair.flags()],
        env=pair.env(),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    if os.environ.get("OFFSETLAKE_TEST_SOURCE_BOOTSTRAP"):
        pytest.skip("a private local pair keeps the checkpoint topics to this scenario")
    with replicated_pair(tmp_path_factory.mktemp("fresh_home")) as replicated:
        yield replicated


def _gold_offsets(pair: Pair, group: str) -> dict[int, int]:
    return {
        row["partition"]: row["downstream_offset"]
        for row in pair.rows("latest_offsets")
        if row["consumer_group"] == group and row["topic"] == pair.remote_topic
    }


def test_a_healthy_failover_on_a_fresh_home_refreshes_every_table_and_applies_gold(pair: Pair) -> None:
    assert not (pair.home / "warehouse").exists()
    run = _cli(pair, "failover", "--refresh", "always", "--refresh-timeout", str(REFRESH_TIMEOUT_S))
    report = run.stdout + run.stderr
    print(f"\nhealthy failover on a fresh home (a full update):\n{run.stdout}")  # with -s: time by phase
    assert run.returncode == 0, report[-4000:]
    assert "refresh: completed" in report, report[-4000:]
    assert "FAILOVER DONE" in report
    progress = [row for row in pair.rows("replication_progress") if row["topic"] == TOPIC]
    assert sorted(row["partition"] for row in progress) == list(range(PARTITIONS))
    for group in GROUPS:
        gold = _gold_offsets(pair, group)
        assert sorted(gold) == list(range(PARTITIONS)), group
        assert pair.committed(group) == gold, group


def test_the_next_healthy_failover_refreshes_only_the_selection(pair: Pair) -> None:
    history = len(pair.rows("replication_progress_history"))
    run = _cli(pair, "failover", "--refresh", "always", "--refresh-timeout", str(REFRESH_TIMEOUT_S))
    report = run.stdout + run.stderr
    print(f"\nhealthy failover on a home with every table (a selection):\n{run.stdout}")  # with -s
    assert run.returncode == 0, report[-4000:]
    assert "refresh: completed" in report, report[-4000:]
    log = (pair.home / "pipeline" / "last-run.log").read_text(encoding="utf-8")
    assert "Flow 'spark_catalog.offsetlake.replication_progress' is EXCLUDED." in log
    assert len(pair.rows("replication_progress_history")) == history
    for group in GROUPS:
        assert pair.committed(group) == _gold_offsets(pair, group), group
