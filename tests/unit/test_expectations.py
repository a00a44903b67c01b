"""Silver's warn-only expectations: declared once per table over its real columns, applied through
one guard that uses ``expect_all`` where the engine has it (Databricks) and is the identity where
it does not (the open-source engine). No Spark needed; tests/integration/test_expectations_spark.py
evaluates the constraints."""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from offsetlake.contract.tables import (
    ALL_TABLES,
    SILVER_CHECKPOINTS,
    SILVER_CONNECT_OFFSETS,
    SILVER_GROUP_OFFSETS,
    SILVER_MAPPINGS,
    SILVER_OFFSET_SYNCS,
    TableSpec,
)
from offsetlake.pipeline.expectations import SILVER_EXPECTATIONS, expect_all

SILVER_TABLES = (
    SILVER_CHECKPOINTS,
    SILVER_OFFSET_SYNCS,
    SILVER_MAPPINGS,
    SILVER_CONNECT_OFFSETS,
    SILVER_GROUP_OFFSETS,
)
_SQL_WORDS = {"IS", "NOT", "NULL", "AND", "OR", "TRUE", "FALSE"}
_IDENTIFIER = re.compile(r"`([^`]+)`|\b([A-Za-z_][A-Za-z0-9_]*)\b")
_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'")


class RecordingEngine:
    """A Databricks-like pipelines module: every expectation decorator records how it was called."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def _recorder(self, name: str) -> Callable[[Any], Callable[[Callable[..., Any]], Callable[..., Any]]]:
        def decorator_factory(*arguments: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
            self.calls.append((name, arguments))

            def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
                function.expectations = arguments  # type: ignore[attr-defined]
                return function

            return decorate

        return decorator_factory

    def __getattr__(self, name: str) -> Any:
        if name in {
            "expect",
            "expect_or_drop",
            "expect_or_fail",
            "expect_all",
            "expect_all_or_drop",
            "expect_all_or_fail",
        }:
            return self._recorder(name)
        raise AttributeError(name)


class OpenSourceEngine:
    """pyspark 4.2's ``pyspark.pipelines``: datasets, no expectations API."""

    def table(self, **_arguments: Any) -> None:
        raise AssertionError("not called here")


def _query() -> str:
    return "the query"


def _referenced_columns(constraint: str) -> set[str]:
    without_literals = _STRING_LITERAL.sub("''", constraint)
    names = {quoted or bare for quoted, bare in _IDENTIFIER.findall(without_literals)}
    return {name for name in names if name.upper() not in _SQL_WORDS}


def test_every_silver_table_and_only_silver_tables_declare_expectations() -> None:
    assert set(SILVER_EXPECTATIONS) == {table.name for table in SILVER_TABLES}
    assert set(SILVER_EXPECTATIONS) <= {table.name for table in ALL_TABLES}
    for table, expectations in SILVER_EXPECTATIONS.items():
        assert len(expectations) >= 3, table


@pytest.mark.parametrize("table", SILVER_TABLES, ids=lambda table: table.name)
def test_constraints_refer_only_to_the_tables_own_columns(table: TableSpec) -> None:
    for name, constraint in SILVER_EXPECTATIONS[table.name].items():
        referenced = _referenced_columns(constraint)
        assert referenced, (name, constraint)
        assert referenced <= set(table.column_names), (name, referenced - set(table.column_names))


def test_expectation_names_are_identifiers_an_event_log_query_can_group_by() -> None:
    for table, expectations in SILVER_EXPECTATIONS.items():
        for name in expectations:
            assert re.fullmatch(r"[a-z][a-z0-9_]*", name), (table, name)


def test_on_databricks_the_guard_applies_expect_all_with_the_declared_dict() -> None:
    engine = RecordingEngine()
    for table, expectations in SILVER_EXPECTATIONS.items():
        engine.calls.clear()
        decorated = expect_all(engine, table)(_query)
        assert decorated is _query
        [(kind, (passed,))] = engine.calls
        assert kind == "expect_all", "warn-only: never drop or fail (quarantine holds bad records)"
        assert isinstance(passed, dict)
        assert passed == dict(expectations)


def test_with_the_open_source_engine_the_guard_is_the_identity() -> None:
    for table in SILVER_EXPECTATIONS:
        assert expect_all(OpenSourceEngine(), table)(_query) is _query


def test_the_local_pipelines_module_has_no_expectations_and_the_guard_stays_silent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from pyspark import pipelines as dp

    assert not hasattr(dp, "expect_all"), "the local engine grew expectations: test them for real"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with caplog.at_level(logging.DEBUG):
            for table in SILVER_EXPECTATIONS:
                assert expect_all(dp, table)(_query) is _query
    assert caplog.records == []


def test_a_table_without_declared_expectations_is_a_programming_error() -> None:
    with pytest.raises(KeyError):
        expect_all(RecordingEngine(), "quarantine")
