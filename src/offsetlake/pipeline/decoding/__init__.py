"""The Spark twin of offsetlake.codecs: each ``*_spark`` module re-expresses its pure codec as Columns."""
