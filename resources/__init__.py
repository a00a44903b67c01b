"""Bundle resources defined in Python (databricks.yml ``python.resources``), beside the YAML ones.

The Databricks CLI runs ``python -m databricks.bundles.build --phase load_resources`` in the bundle
root with the interpreter of ``python.venv_path``, which calls :func:`load_resources` with the
target and its variable values; that environment needs ``databricks-bundles`` and ``offsetlake``
(docs/deploy.md, prerequisites). tests/bundle_resolver.py calls it the same way.
"""

from __future__ import annotations

from databricks.bundles.core import Bundle, Resources

from .offsetlake_failover_job import FAILOVER_JOB_KEY, failover_job


def load_resources(bundle: Bundle) -> Resources:
    """Every resource defined in Python: the failover job."""
    resources = Resources()
    resources.add_job(FAILOVER_JOB_KEY, failover_job(bundle))
    return resources
