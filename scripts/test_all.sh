#!/usr/bin/env bash
# `make test` (what CI runs): lint; the unit layer under coverage while the compat environments are
# created (pip needs no Spark and no broker, so it cannot disturb the unit tests); integration and
# harness under coverage (in-process and every child: the CLI, spark-pipelines' Python child,
# Spark's Python workers through scripts/spark_coverage_daemon.py); the coverage report with its
# floor; the e2e scenarios (not under coverage: they run the same code as the layers below at
# pipeline scale, where measuring every Spark worker would cost minutes); then the compat suite.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${OFFSETLAKE_VENV:-.venv}
PY=$VENV/bin/python
export OFFSETLAKE_VENV=$VENV

covered() {
  PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}" \
    SPARK_SUBMIT_OPTS="-Dspark.python.daemon.module=spark_coverage_daemon ${SPARK_SUBMIT_OPTS:-}" \
    "$PY" -m coverage run -m pytest --durations=15 "$@"
}

"$VENV/bin/ruff" check .
"$PY" -m coverage erase

prepare_log=$(mktemp)
trap 'rm -f "$prepare_log"' EXIT
scripts/compat_tests.sh --prepare >"$prepare_log" 2>&1 &
prepare=$!
unit_status=0
covered tests/unit || unit_status=$?
if ! wait "$prepare"; then
  cat "$prepare_log" >&2
  echo "test: creating the compat environments failed" >&2
  exit 1
fi
cat "$prepare_log"
[ "$unit_status" -eq 0 ] || exit "$unit_status"

covered tests/integration tests/harness
scripts/coverage_report.sh
"$PY" -m pytest --durations=15 tests/e2e
scripts/compat_tests.sh
