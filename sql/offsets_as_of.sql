-- The translated offsets that were current at a point in time (e.g. just before an incident),
-- one row per group, partition and method. Replace the timestamp (UTC).
SELECT source_cluster, consumer_group, topic, `partition`, method, downstream_offset, upstream_offset, valid_from
FROM offset_history
WHERE valid_from <= TIMESTAMP '2030-01-01 00:00:00'
  AND (valid_to IS NULL OR valid_to > TIMESTAMP '2030-01-01 00:00:00')
ORDER BY source_cluster, consumer_group, topic, `partition`, method
