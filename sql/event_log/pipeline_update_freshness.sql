-- Every pipeline update, newest first: when it started and ended, its state (the last
-- update_progress state: COMPLETED, FAILED, CANCELED, or RUNNING... while under way), how long it
-- took (so far, while running) and how long ago it ended; on every row, when the last successful
-- (COMPLETED) update ended and how old that is: the freshness of the tables.
-- Runs on the pipeline event log the bundle publishes as `event_log` in the pipeline's catalog and
-- schema. get_json_object(details, '$.update_progress.state') is details:update_progress.state.
-- After the documented update-history query: https://docs.databricks.com/en/ldp/monitor-event-logs
-- Event log schema: https://docs.databricks.com/aws/dlt/monitor-event-log-schema
WITH updates AS (
  SELECT origin.update_id AS update_id,
         MIN(CASE WHEN event_type = 'create_update' THEN timestamp END) AS started_at,
         MAX_BY(get_json_object(details, '$.update_progress.state'), timestamp)
           FILTER (WHERE event_type = 'update_progress') AS state,
         MAX(CASE WHEN event_type = 'update_progress'
                   AND get_json_object(details, '$.update_progress.state') IN ('COMPLETED', 'FAILED', 'CANCELED')
                  THEN timestamp END) AS ended_at
  FROM event_log
  WHERE event_type IN ('create_update', 'update_progress') AND origin.update_id IS NOT NULL
  GROUP BY origin.update_id
  HAVING started_at IS NOT NULL
),
last_success AS (
  SELECT MAX(ended_at) AS ended_at FROM updates WHERE state = 'COMPLETED'
)
SELECT u.update_id,
       u.started_at,
       u.ended_at,
       u.state,
       timestampdiff(SECOND, u.started_at, COALESCE(u.ended_at, current_timestamp())) AS duration_seconds,
       timestampdiff(SECOND, u.ended_at, current_timestamp()) AS ended_seconds_ago,
       s.ended_at AS last_success_at,
       timestampdiff(SECOND, s.ended_at, current_timestamp()) AS last_success_age_seconds
FROM updates u
CROSS JOIN last_success s
ORDER BY u.started_at DESC
