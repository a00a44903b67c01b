"""offsetlake's development harness: local brokers, the MM2 simulator and the demo.

It lives beside the product package, not in it: the job wheel that runs on Databricks is built
from ``offsetlake`` only (pyproject.toml), and the product never imports from here. The harness
imports the product freely. Kafka keeps its MirrorMaker test harness the same way, under
``connect/mirror/src/test``.
"""
