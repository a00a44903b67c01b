"""contract/: the room below every engine. Importing it loads no engine, and each table spec gives
its own Arrow and Spark schemas (the one SQL -> Arrow type map)."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pyarrow as pa
import pytest

from offsetlake import contract
from offsetlake.contract.tables import ALL_TABLES, K2K_TRACING_LOOKUPS, OFFSET_VERSIONS, TableSpec, arrow_type

ENGINES = ("pyspark", "confluent_kafka", "pyarrow", "py4j")


def test_importing_the_contract_loads_no_engine() -> None:
    """Every module of contract/ imported in a fresh interpreter: no Spark, no Kafka client, and no
    pyarrow until a spec's Arrow schema is asked for (the bundle's resources/ load it without them)."""
    modules = [f"offsetlake.contract.{info.name}" for info in pkgutil.iter_modules(contract.__path__)]
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {ENGINES!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert {"offsetlake.contract.gold", "offsetlake.contract.tables"} <= set(modules)
    assert json.loads(done.stdout) == []


@pytest.mark.parametrize("spec", ALL_TABLES, ids=lambda spec: spec.name)
def test_every_spec_gives_its_arrow_and_spark_schema(spec: TableSpec) -> None:
    arrow = spec.arrow_schema
    assert arrow.names == spec.column_names
    assert spec.spark_schema == ", ".join(f"`{name}` {kind}" for name, kind, _ in spec.columns)


def test_nested_types_map_field_by_field() -> None:
    assert OFFSET_VERSIONS.arrow_schema.field("__END_AT").type == pa.struct(
        [("observed_at", pa.timestamp("us", tz="UTC")), ("observation_order", pa.int64())]
    )
    assert arrow_type("ARRAY<STRUCT<key: STRING, value: BINARY>>") == pa.list_(
        pa.struct([("key", pa.string()), ("value", pa.binary())])
    )
    assert K2K_TRACING_LOOKUPS.arrow_schema.field("partition").type == pa.int32()


def test_a_type_without_an_arrow_twin_is_refused() -> None:
    with pytest.raises(ValueError, match="DECIMAL"):
        arrow_type("DECIMAL(10,2)")
