"""One meaning of "run" in module names (issue 49): ``run.py`` is a feature's entry module, its one
``run_<verb>(request)``, and no other product module is named after a run (a local pipeline run is an
update, a Databricks job run's report a job report, the session chooser ``sessions``)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "offsetlake"
FEATURES = {"apply", "mm2_reset", "failover", "failback"}


def test_run_names_only_a_features_entry_module() -> None:
    named_run = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.stem.startswith("run") or "_run" in path.stem
    }
    assert named_run == {f"{feature}/run.py" for feature in FEATURES}


def test_each_feature_has_its_entry_module() -> None:
    for feature in FEATURES:
        source = (PACKAGE / feature / "run.py").read_text(encoding="utf-8")
        assert "\ndef run_" in source, feature
