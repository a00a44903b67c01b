-- Failed flows of each pipeline update, newest first: when the flow failed, its error (the first
-- exception's class and message; the event's message when it carries none) and how the flow ended
-- in that update (a flow retried within the update can fail and then complete).
-- Runs on the pipeline event log the bundle publishes as `event_log` in the pipeline's catalog and
-- schema. get_json_object(details, '$.flow_progress.status') is details:flow_progress.status.
-- Event log schema (origin, details, error): https://docs.databricks.com/aws/dlt/monitor-event-log-schema
-- Querying it: https://docs.databricks.com/en/ldp/monitor-event-logs
WITH flow_events AS (
  SELECT origin.update_id AS update_id,
         origin.flow_name AS flow_name,
         timestamp,
         get_json_object(details, '$.flow_progress.status') AS status,
         error,
         message
  FROM event_log
  WHERE event_type = 'flow_progress' AND origin.flow_name IS NOT NULL
),
flow_ends AS (
  SELECT update_id, flow_name, MAX_BY(status, timestamp) AS final_status
  FROM flow_events
  GROUP BY update_id, flow_name
)
SELECT f.update_id,
       f.flow_name,
       f.timestamp AS failed_at,
       get(f.error.exceptions, 0).class_name AS error_class,
       COALESCE(get(f.error.exceptions, 0).message, f.message) AS error_message,
       e.final_status
FROM flow_events f
JOIN flow_ends e ON e.update_id = f.update_id AND e.flow_name = f.flow_name
WHERE f.status = 'FAILED'
ORDER BY failed_at DESC, f.flow_name
