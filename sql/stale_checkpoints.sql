-- Per source cluster: how fresh MM2's checkpoints are, and how many group partitions have a
-- checkpoint translating an OLDER upstream offset than the group has committed since (MM2's
-- checkpoints lag or stopped, so latest_offsets prefers the fresher offset-sync translation).
-- MM2 emits a checkpoint only when the offset moves, so the current row's valid_from is the
-- newest checkpoint for that partition.
SELECT c.source_cluster,
       MAX(c.valid_from) AS newest_checkpoint,
       unix_timestamp(current_timestamp()) - unix_timestamp(MAX(c.valid_from)) AS newest_checkpoint_age_seconds,
       COUNT(*) AS checkpointed_partitions,
       COUNT_IF(l.upstream_offset > c.upstream_offset) AS partitions_behind_committed_offset
FROM offset_history c
LEFT JOIN latest_offsets l
  ON l.source_cluster = c.source_cluster AND l.consumer_group = c.consumer_group
 AND l.topic = c.topic AND l.`partition` = c.`partition`
WHERE c.method = 'checkpoint' AND c.valid_to IS NULL
GROUP BY c.source_cluster
ORDER BY c.source_cluster
