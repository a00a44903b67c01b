"""Databricks job runs as offsetlake reads them (the Jobs API, through databricks-sdk)."""
