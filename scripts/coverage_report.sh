#!/usr/bin/env bash
# The coverage of the product code (src/offsetlake) after `coverage run` of the main suite (`make
# test`): combines the data files of every Python process the suite started (pytest, the CLI run in
# subprocesses, the Python child of spark-pipelines, Spark's Python workers; pyproject.toml's
# [tool.coverage.run]), prints the per-file table (fully covered files left out) with the total,
# then the product modules no test imported at all. Exits non-zero below [tool.coverage.report]
# fail_under.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${OFFSETLAKE_VENV:-.venv}/bin/python

"$PY" -m coverage combine --quiet
status=0
"$PY" -m coverage report || status=$?

"$PY" - <<'EOF'
from pathlib import Path

import coverage

cov = coverage.Coverage()
cov.load()
root = Path.cwd()
# No line ran, not even the module's own imports and definitions: no test imported it, in any
# process. (The data lists every source file, run or not; files without statements are left out.)
never = []
for name in sorted(cov.get_data().measured_files()):
    _, statements, _, missing, _ = cov.analysis2(name)
    if statements and len(missing) == len(statements):
        never.append(Path(name).relative_to(root).as_posix())
print(f"\nproduct modules no test imports ({len(never)}):")
for name in never:
    print(f"  {name}")
EOF
exit $status
