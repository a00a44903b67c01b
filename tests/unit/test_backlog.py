"""What an update is about to read from the target, from the log bounds and the stream's checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from offsetlake.contract.settings import PipelineSettings
from offsetlake.local.backlog import flow_checkpoint, records_to_read, stream_position, target_subscriptions
from offsetlake.local.home import LocalHome
from offsetlake.mirror.clusters import ClusterEndpoint
from offsetlake.mirror.positions import LogBounds

_BOUNDS = st.tuples(st.integers(0, 1_000), st.integers(0, 1_000)).map(
    lambda pair: LogBounds(min(pair), max(pair))
)


@given(
    st.dictionaries(st.tuples(st.sampled_from("ab"), st.integers(0, 3)), _BOUNDS),
    st.dictionaries(st.tuples(st.sampled_from("ab"), st.integers(0, 3)), st.integers(-5, 1_500)),
)
def test_records_to_read_count_from_the_position_within_the_log(
    bounds: dict[tuple[str, int], LogBounds], position: dict[tuple[str, int], int]
) -> None:
    expected = 0
    for key, bound in bounds.items():
        start = min(max(position.get(key, bound.log_start), bound.log_start), bound.log_end)
        expected += bound.log_end - start
    assert records_to_read(bounds, position) == expected
    assert records_to_read(bounds, {}) == sum(bound.log_end - bound.log_start for bound in bounds.values())


def _offsets_file(directory: Path, batch: int, offset: dict[str, dict[str, int]]) -> None:
    """A batch of Spark's offset log as the local engine writes it: version, metadata, one line per source."""
    directory.mkdir(parents=True, exist_ok=True)
    metadata = {"batchWatermarkMs": 0, "batchTimestampMs": 1795718437855, "conf": {}}
    (directory / str(batch)).write_text(f"v1\n{json.dumps(metadata)}\n{json.dumps(offset)}", encoding="utf-8")


def test_the_position_is_the_newest_batch_of_the_newest_checkpoint_version(tmp_path: Path) -> None:
    checkpoint = flow_checkpoint(LocalHome(tmp_path), "bronze_checkpoints")
    assert stream_position(checkpoint) == {}
    _offsets_file(checkpoint / "0" / "offsets", 2, {"a.checkpoints.internal": {"0": 7}})
    _offsets_file(checkpoint / "0" / "offsets", 10, {"a.checkpoints.internal": {"0": 45, "1": 3}})
    assert stream_position(checkpoint) == {
        ("a.checkpoints.internal", 0): 45,
        ("a.checkpoints.internal", 1): 3,
    }
    (checkpoint / "1" / "offsets").mkdir(parents=True)  # a full refresh's new version, nothing planned yet
    assert stream_position(checkpoint) == {}


def test_an_unreadable_offset_log_counts_from_the_log_start(tmp_path: Path) -> None:
    offsets = tmp_path / "0" / "offsets"
    offsets.mkdir(parents=True)
    (offsets / "0").write_text("v1\n{}\n", encoding="utf-8")
    assert stream_position(tmp_path) == {}
    (offsets / "1").write_text('v1\n{}\n{"t": {"x": 1}}', encoding="utf-8")
    assert stream_position(tmp_path) == {}


def test_the_checkpoint_lies_where_the_local_engine_puts_a_flow_of_the_tables_name(tmp_path: Path) -> None:
    home = LocalHome(tmp_path)
    assert flow_checkpoint(home, "bronze_checkpoints") == (
        home.pipeline_storage / "_checkpoints/spark_catalog/offsetlake/bronze_checkpoints/bronze_checkpoints"
    )


def test_offset_syncs_count_only_where_mm2_writes_them_to_the_target() -> None:
    settings = PipelineSettings(target_bootstrap_servers="t:9092", sources=(ClusterEndpoint("a", "s:9092"),))
    assert set(target_subscriptions(settings)) == {"bronze_checkpoints"}
    pattern = target_subscriptions(settings)["bronze_checkpoints"].pattern
    assert pattern == settings.policy.checkpoints_topic_pattern()
    on_target = PipelineSettings(
        target_bootstrap_servers="t:9092",
        sources=(ClusterEndpoint("a", "s:9092"),),
        offset_syncs_location="target",
    )
    assert set(target_subscriptions(on_target)) == {"bronze_checkpoints", "bronze_offset_syncs"}
