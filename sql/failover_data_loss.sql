-- The cost of failing over now, per consumer group: records it consumed on the source that are
-- not on the target yet (its committed offset beyond MM2's replicated position), and records it
-- has not consumed that would be lost. NULL figures: MM2's position is unknown (reset).
SELECT source_cluster,
       consumer_group,
       COUNT(*) AS partitions,
       SUM(consumed_not_replicated) AS consumed_not_replicated,
       SUM(unconsumed_lost) AS unconsumed_lost,
       COUNT_IF(status IS NULL OR status = 'reset') AS partitions_unknown,
       MAX(progress_at) AS as_of
FROM failover_data_loss
GROUP BY source_cluster, consumer_group
ORDER BY unconsumed_lost DESC NULLS FIRST, source_cluster, consumer_group
