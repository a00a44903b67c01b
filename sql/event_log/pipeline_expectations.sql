-- Silver's warn-only expectations (src/offsetlake/pipeline/expectations.py), per table and
-- expectation: records that passed and failed over every update in the event log, in the newest
-- update that reported them, and when a record last failed. A failed record is one a decoder should
-- have quarantined: its rows are still in silver (warn only), so look at them with the constraint.
-- Runs on the pipeline event log the bundle publishes as `event_log` in the pipeline's catalog and
-- schema. get_json_object(details, '$.flow_progress.data_quality.expectations') is
-- details:flow_progress.data_quality.expectations.
-- After the documented data-quality query: https://docs.databricks.com/en/ldp/monitor-event-logs
-- Event log schema: https://docs.databricks.com/aws/dlt/monitor-event-log-schema
WITH checks AS (
  SELECT origin.update_id AS update_id,
         timestamp,
         explode(from_json(
           get_json_object(details, '$.flow_progress.data_quality.expectations'),
           'array<struct<name: string, dataset: string, passed_records: bigint, failed_records: bigint>>'
         )) AS expectation
  FROM event_log
  WHERE event_type = 'flow_progress'
    AND get_json_object(details, '$.flow_progress.data_quality.expectations') IS NOT NULL
),
latest AS (
  SELECT MAX_BY(update_id, timestamp) AS update_id FROM checks
)
SELECT c.expectation.dataset AS dataset,
       c.expectation.name AS expectation,
       SUM(c.expectation.passed_records) AS passed_records,
       SUM(c.expectation.failed_records) AS failed_records,
       COALESCE(SUM(CASE WHEN c.update_id = l.update_id THEN c.expectation.passed_records END), 0)
         AS passed_in_latest_update,
       COALESCE(SUM(CASE WHEN c.update_id = l.update_id THEN c.expectation.failed_records END), 0)
         AS failed_in_latest_update,
       MAX(CASE WHEN c.expectation.failed_records > 0 THEN c.timestamp END) AS last_failed_at
FROM checks c
CROSS JOIN latest l
GROUP BY c.expectation.dataset, c.expectation.name
ORDER BY failed_records DESC, dataset, expectation
