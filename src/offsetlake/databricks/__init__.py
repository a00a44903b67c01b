"""The Databricks runtime as offsetlake talks to it: job runs and job schedules through the Jobs API
(databricks-sdk). Inside this package ``databricks`` still names the SDK: imports are absolute."""
