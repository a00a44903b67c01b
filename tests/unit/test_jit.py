"""The JIT a local update's JVM starts with: chosen by the records it will read, or set."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetlake.errors import InvalidValueError
from offsetlake.local import class_archive
from offsetlake.local.class_archive import CACHE_DIR_ENV, DISABLE_ENV
from offsetlake.local.home import LocalHome
from offsetlake.local.jit import AUTO, JIT_ENV, OPTIMISING_FROM_RECORDS, Jit, choose_jit
from offsetlake.local.spark import LOCAL_JVM_OPTIONS, jvm_start_conf, local_spark_conf


def _never() -> int | None:
    raise AssertionError("the backlog was asked for although the setting decides")


@given(st.integers(min_value=0, max_value=10 * OPTIMISING_FROM_RECORDS))
def test_c2_runs_from_the_threshold_on(records: int) -> None:
    choice = choose_jit(lambda: records, AUTO)
    assert (choice.jit is Jit.OPTIMISING) == (records >= OPTIMISING_FROM_RECORDS)
    assert f"{records:,} records to read" in choice.reason


def test_an_unknown_backlog_keeps_c1_alone() -> None:
    choice = choose_jit(lambda: None, AUTO)
    assert choice.jit is Jit.QUICK
    assert choice.describe() == "JIT: quick (C1 only): records to read not known"


@pytest.mark.parametrize("setting", ["quick", "optimising"])
def test_a_setting_decides_without_asking_the_target(setting: str) -> None:
    choice = choose_jit(_never, setting)
    assert choice.jit == Jit(setting)
    assert choice.reason == f"{JIT_ENV}={setting}"


def test_the_environment_is_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(JIT_ENV, "optimising")
    assert choose_jit(_never).jit is Jit.OPTIMISING
    monkeypatch.setenv(JIT_ENV, "")
    assert choose_jit(lambda: OPTIMISING_FROM_RECORDS).jit is Jit.OPTIMISING


def test_a_bad_setting_is_one_clear_error() -> None:
    with pytest.raises(
        InvalidValueError, match=r"OFFSETLAKE_JIT='c2': expected one of auto, quick, optimising"
    ):
        choose_jit(_never, "c2")


def test_only_the_quick_choice_stops_at_c1_and_both_keep_the_collector_and_code_cache() -> None:
    assert "-XX:TieredStopAtLevel=1" in Jit.QUICK.jvm_options
    assert "TieredStopAtLevel" not in Jit.OPTIMISING.jvm_options
    for jit in Jit:
        assert "-XX:+UseSerialGC" in jit.jvm_options
        assert "-XX:ReservedCodeCacheSize=240m" in jit.jvm_options
    assert Jit.QUICK.jvm_options == LOCAL_JVM_OPTIONS


def test_the_jvm_gets_the_chosen_options_and_never_writes_a_class_archive_for_c2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    monkeypatch.setattr(class_archive, "_start_writer", lambda *paths: None)  # no JVM will record
    quick = jvm_start_conf(LocalHome(tmp_path), "pipeline")["spark.driver.extraJavaOptions"]
    optimising = jvm_start_conf(LocalHome(tmp_path), "pipeline", Jit.OPTIMISING)[
        "spark.driver.extraJavaOptions"
    ]
    assert "-XX:TieredStopAtLevel=1" in quick and "-XX:DumpLoadedClassList=" in quick
    assert "TieredStopAtLevel" not in optimising and "-XX:DumpLoadedClassList=" not in optimising
    assert (
        "TieredStopAtLevel"
        not in local_spark_conf(LocalHome(tmp_path), Jit.OPTIMISING)["spark.driver.extraJavaOptions"]
    )
