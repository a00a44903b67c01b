"""Which flows ask for generated code: only where the pipeline's configuration interprets."""

from __future__ import annotations

from offsetlake.pipeline.generated_code import FACTORY_MODE, INTERPRETED, every_record_conf


def test_a_flow_over_every_record_asks_for_generated_code_only_where_the_pipeline_interprets() -> None:
    assert every_record_conf(INTERPRETED) == {FACTORY_MODE: "FALLBACK"}
    assert every_record_conf({FACTORY_MODE: "FALLBACK"}) == {}
    assert every_record_conf({}) == {}, "Databricks: the runtime's own settings, nothing asked"
