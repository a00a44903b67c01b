"""A truncated gold is not "never created" (issue 31): ``offsetlake failover --refresh never`` on a
home an update killed outright left with its marker and empty views, on a real target broker. Gold is
put back first and every translation it held is applied; an emptied gold with no backup, while
bronze_checkpoints holds checkpoint records, is refused in one line unless the operator asks for the
checkpoint tail alone (``--tail-only``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from offsetlake.codecs.mm2 import Checkpoint, encode_checkpoint
from offsetlake.contract.tables import BRONZE_CHECKPOINTS, LATEST_OFFSETS, TableSpec
from offsetlake.local.gold_guard import GoldGuard
from offsetlake.local.home import HOME_ENV, LocalHome
from offsetlake.local.locks import pipeline_run_lock
from tests.kafka_helpers import committed_offsets, create_topic, produce

pytestmark = pytest.mark.kafka

COMMAND_TIMEOUT_S = 300


def write_table(home: Path, spec: TableSpec, rows: list[dict[str, Any]]) -> Path:
    """``spec``'s table as local Spark lays it out: Parquet part files in the warehouse."""
    directory = home / "warehouse" / "offsetlake.db" / spec.name
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.Table.from_pylist(rows, spec.arrow_schema), directory / "part-00000-c000.snappy.parquet"
    )
    return directory


def failover(home: Path, target: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "offsetlake.cli",
            "failover",
            "--refresh",
            "never",
            "--target",
            target,
            *flags,
        ],
        env={**os.environ, HOME_ENV: str(home)},
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )


def test_a_failover_puts_back_gold_a_killed_update_emptied_and_refuses_an_emptied_gold_bronze_contradicts(
    target_bootstrap: str, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    alias = unique_name("primary")
    topic, checkpoints = f"{alias}.orders", f"{alias}.checkpoints.internal"
    in_gold, in_tail = unique_name("in-gold"), unique_name("in-tail")
    create_topic(target_bootstrap, topic)
    produce(target_bootstrap, topic, [(None, b"x")] * 30)
    create_topic(target_bootstrap, checkpoints)
    # A Kafka timestamp has milliseconds, and so has the gold the pipeline derives from it.
    now = datetime.now(UTC)
    now = now.replace(microsecond=now.microsecond // 1000 * 1000)
    ingested = Checkpoint(in_gold, topic, 0, 50, 20, "")
    produce(
        target_bootstrap,
        checkpoints,
        [
            (*encode_checkpoint(ingested), int(now.timestamp() * 1000)),
            (*encode_checkpoint(Checkpoint(in_tail, topic, 0, 40, 12, "")), int(now.timestamp() * 1000)),
        ],
    )
    # The pipeline ingested the first checkpoint (bronze) and translated it (gold)...
    key, value = encode_checkpoint(ingested)
    write_table(tmp_path, BRONZE_CHECKPOINTS, [{
        "key": key, "value": value, "topic": checkpoints, "partition": 0, "offset": 0, "timestamp": now,
        "timestampType": 0, "headers": [], "source_cluster": alias, "ingested_at": now,
    }])  # fmt: skip
    latest = write_table(tmp_path, LATEST_OFFSETS, [{
        "source_cluster": alias, "consumer_group": in_gold, "topic": topic, "partition": 0,
        "downstream_offset": 20, "upstream_offset": 50, "method": "checkpoint", "metadata": "",
        "source_timestamp": now, "valid_from": now, "valid_to": None, "methods_disagree": False,
        "last_observed_at": now,
    }])  # fmt: skip
    # ...then an update backed gold up, emptied the view, and was killed before putting it back.
    with pipeline_run_lock(LocalHome(tmp_path)):
        GoldGuard(LocalHome(tmp_path)).protect()
        for part in latest.glob("part-*"):
            part.unlink()

    # The shared target holds other tests' checkpoint topics too: this test's groups only.
    mine = ("--groups", f"{re.escape(in_gold)}|{re.escape(in_tail)}")
    recovered = failover(tmp_path, target_bootstrap, *mine)

    report = recovered.stdout + recovered.stderr
    assert recovered.returncode == 0, report[-4000:]
    assert committed_offsets(target_bootstrap, in_gold, [(topic, 0)]) == {(topic, 0): 20}, report[-4000:]
    assert committed_offsets(target_bootstrap, in_tail, [(topic, 0)]) == {(topic, 0): 12}, report[-4000:]
    assert not (GoldGuard(LocalHome(tmp_path)).backup_dir / "UPDATE-IN-PROGRESS").exists()

    # Emptied again, with no backup to put back: refused, unless the tail alone is asked for.
    for part in latest.glob("part-*"):
        part.unlink()
    refused = failover(tmp_path, target_bootstrap, *mine)
    assert refused.returncode == 1, refused.stdout[-3000:] + refused.stderr[-3000:]
    assert "latest_offsets` is empty while bronze_checkpoints holds the checkpoint records" in refused.stderr
    assert "--tail-only" in refused.stderr

    alone = failover(tmp_path, target_bootstrap, "--tail-only", *mine)
    assert alone.returncode == 0, alone.stdout[-3000:] + alone.stderr[-3000:]
    assert in_gold in alone.stdout
    assert in_tail in alone.stdout
