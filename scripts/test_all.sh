#!/usr/bin/env bash
# `make test` (what CI runs): lint; the unit layer under coverage while the compat environments are
# created (pip needs no Spark and no broker, so it cannot disturb the unit tests); integration and
# harness under coverage (in-process and every child: the CLI, spark-pipelines' Python child,
# Spark's Python workers through scripts/spark_coverage_daemon.py) while the compat suite runs
# beside them; the coverage report with its floor; then the e2e scenarios (not under coverage:
# they run the same code as the layers below at pipeline scale, where measuring every Spark worker
# would cost minutes).
#
# Each layer runs on OFFSETLAKE_TEST_WORKERS pytest-xdist workers (default 2), a module per worker
# (--dist loadfile: a module's fixtures, its broker pair and scenario, stay in one process). The
# layers with brokers and Spark wait on them half the time (measured: integration 44% of 2 cores
# busy run alone, e2e 70%), which is also why the compat suite runs beside integration.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${OFFSETLAKE_VENV:-.venv}
PY=$VENV/bin/python
WORKERS=${OFFSETLAKE_TEST_WORKERS:-2}
# A module per worker; tests/conftest.py hands out modules at the last moment under loadfile.
XDIST=(-n "$WORKERS" --dist loadfile)
export OFFSETLAKE_VENV=$VENV

covered() {
  PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}" \
    SPARK_SUBMIT_OPTS="-Dspark.python.daemon.module=spark_coverage_daemon ${SPARK_SUBMIT_OPTS:-}" \
    "$PY" -m coverage run -m pytest "${XDIST[@]}" --durations=15 "$@"
}

"$VENV/bin/ruff" check .
"$PY" -m coverage erase

compat_log=$(mktemp)
trap 'rm -f "$compat_log"' EXIT
scripts/compat_tests.sh --prepare >"$compat_log" 2>&1 &
compat=$!
unit_status=0
covered tests/unit || unit_status=$?
if ! wait "$compat"; then
  cat "$compat_log" >&2
  echo "test: creating the compat environments failed" >&2
  exit 1
fi
cat "$compat_log"
[ "$unit_status" -eq 0 ] || exit "$unit_status"

scripts/compat_tests.sh >"$compat_log" 2>&1 &
compat=$!
integration_status=0
covered tests/integration tests/harness || integration_status=$?
compat_status=0
wait "$compat" || compat_status=$?
cat "$compat_log"
[ "$integration_status" -eq 0 ] || exit "$integration_status"
[ "$compat_status" -eq 0 ] || exit "$compat_status"

scripts/coverage_report.sh
"$PY" -m pytest "${XDIST[@]}" --durations=15 tests/e2e
