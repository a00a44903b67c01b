"""The command line's contract for operator errors: one clear line and exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from offsetlake.cli.main import EXIT_USAGE, main
from offsetlake.clusters import START_HINT
from offsetlake_dev.local_cluster import running_clusters


def test_missing_local_clusters_is_a_clear_usage_error(
    offsetlake_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pipeline", "run"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("offsetlake: no local clusters recorded")
    assert START_HINT in err
    assert "Traceback" not in err


@pytest.mark.kafka
def test_a_bad_pipeline_setting_is_a_clear_usage_error(
    offsetlake_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Settings are checked before Spark starts; the local clusters only have to be recorded.
    with running_clusters(offsetlake_home, preferred_ports=None):
        code = main(["pipeline", "run", "--set", "offsetlake.replication.policy=bogus"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.startswith("offsetlake: ")
    assert "bogus" in err
    assert "Traceback" not in err
