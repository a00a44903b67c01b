-- Replication lag of each source topic at every pipeline update (one log-offset snapshot each):
-- the series to chart, e.g. over the hour before an incident.
SELECT source_cluster,
       topic,
       snapshot_time,
       SUM(lag_records) AS lag_records,
       MAX(lag_seconds) AS max_lag_seconds,
       SUM(log_end_offset) AS source_log_end
FROM replication_progress_history
WHERE status = 'replicating'
GROUP BY source_cluster, topic, snapshot_time
ORDER BY source_cluster, topic, snapshot_time
