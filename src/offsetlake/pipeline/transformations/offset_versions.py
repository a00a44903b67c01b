"""offset_versions: SCD type 2 versions of each translation over translation_observations.

AUTO CDC on Databricks (``offsetlake.gold.incremental`` ``auto_cdc``): only the new observations
are applied. Locally (``recompute``) a materialized view over every observation, the one gold step
whose cost still grows with history there (the open-source engine cannot MERGE into Parquet).
offset_history and latest_offsets read the versions alone; the rules are in
offsetlake.pipeline.history.
"""

from __future__ import annotations

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from offsetlake.contract.tables import OFFSET_VERSIONS, TRANSLATION_OBSERVATIONS
from offsetlake.pipeline.generated_code import every_record_conf
from offsetlake.pipeline.history import offset_versions, versions_by_auto_cdc
from offsetlake.pipeline.kafka_readers import pipeline_settings

spark = SparkSession.builder.getOrCreate()
settings = pipeline_settings(spark)

if settings.gold_incremental == "auto_cdc":
    versions_by_auto_cdc(
        dp,
        source=TRANSLATION_OBSERVATIONS.name,
        target=OFFSET_VERSIONS.name,
        comment=OFFSET_VERSIONS.comment,
    )
else:

    @dp.materialized_view(
        name=OFFSET_VERSIONS.name,
        comment=OFFSET_VERSIONS.comment,
        schema=OFFSET_VERSIONS.schema_ddl,
        spark_conf=every_record_conf(spark.conf.getAll),
    )
    def offset_versions_view() -> DataFrame:
        return offset_versions(spark.read.table(TRANSLATION_OBSERVATIONS.name))
