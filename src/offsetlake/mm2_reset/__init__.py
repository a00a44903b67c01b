"""``offsetlake mm2 reset-offsets``: delete a MirrorMaker 2 connector's stored Connect offsets, safely.

``plan`` decides what happens to each stored offset (pure), ``offsets_topic`` reads and writes
Kafka, ``run.run_reset`` runs one reset (tombstones or the Connect REST API, then optionally the
offset-syncs truncation), ``audit`` records it in ``mm2_reset_audit``.
"""
