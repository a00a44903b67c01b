"""LocalHome: the one place that knows a local home's layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from offsetlake.local.home import HOME_ENV, LocalHome, local_home


def test_resolve_prefers_the_argument_then_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "from-env"))
    assert LocalHome.resolve().root == (tmp_path / "from-env").resolve()
    assert LocalHome.resolve(tmp_path / "given").root == (tmp_path / "given").resolve()
    assert (tmp_path / "given").is_dir()
    assert local_home() == (tmp_path / "from-env").resolve()


def test_the_layout_is_what_docs_architecture_states(tmp_path: Path) -> None:
    home = LocalHome(tmp_path)
    assert home.schema_dir == tmp_path / "warehouse" / "offsetlake.db"
    assert home.run_lock == tmp_path / "pipeline" / "run.lock"
    assert home.derby_lock == tmp_path / "metastore_db" / "dbex.lck"
    assert home.audit_journal_for("OffsetLake") == tmp_path / "audit-pending" / "offsetlake"
    assert home.gold_backup == tmp_path / "pipeline" / "gold-backup"
