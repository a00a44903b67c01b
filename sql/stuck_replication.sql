-- Partitions where MM2 is stuck: its position has not moved since last_progress_at while the
-- source log grew after that (a quiet topic with nothing to replicate is not stuck). Also lists
-- partitions whose stored offset was reset, which MM2 will replicate again from the start.
SELECT p.source_cluster,
       p.topic,
       p.`partition`,
       p.status,
       p.upstream_offset,
       p.log_end_offset,
       p.lag_records,
       p.last_progress_at,
       unix_timestamp(p.snapshot_time) - unix_timestamp(p.last_progress_at) AS seconds_without_progress,
       p.log_end_offset - MIN(h.log_end_offset) AS source_growth_since_progress
FROM replication_progress p
JOIN replication_progress_history h
  ON h.source_cluster = p.source_cluster AND h.topic = p.topic AND h.`partition` = p.`partition`
 AND (p.last_progress_at IS NULL OR h.snapshot_time >= p.last_progress_at)
WHERE p.status IN ('replicating', 'reset')
GROUP BY p.source_cluster, p.topic, p.`partition`, p.status, p.upstream_offset, p.log_end_offset,
         p.lag_records, p.last_progress_at, p.snapshot_time
HAVING p.status = 'reset' OR (p.lag_records > 0 AND p.log_end_offset > MIN(h.log_end_offset))
ORDER BY seconds_without_progress DESC NULLS FIRST
