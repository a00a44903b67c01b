-- How far is MirrorMaker 2 behind, per source topic, now? From the newest source log-offset
-- snapshot and MM2's own position (Connect offsets, or a fresher offset sync). A partition MM2
-- never replicated or whose stored offset was reset is counted as such, never as zero lag.
SELECT source_cluster,
       topic,
       COUNT(*) AS partitions,
       SUM(lag_records) AS lag_records,
       MAX(lag_seconds) AS max_lag_seconds,
       MIN(last_progress_at) AS oldest_progress,
       COUNT_IF(status = 'reset') AS reset_partitions,
       COUNT_IF(status = 'never_replicated') AS never_replicated_partitions,
       MAX(snapshot_time) AS as_of
FROM replication_progress
GROUP BY source_cluster, topic
ORDER BY lag_records DESC NULLS FIRST, source_cluster, topic
