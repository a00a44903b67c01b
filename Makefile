# The two commands a newcomer needs: `make demo` and `make test`. Both bootstrap .venv first.
VENV ?= .venv
PY := $(VENV)/bin/python
export OFFSETLAKE_VENV := $(VENV)

.PHONY: bootstrap demo test test-unit test-compat lint format bench up down clean lock

bootstrap:
	@scripts/bootstrap.sh

demo: bootstrap
	@$(PY) -m offsetlake_dev demo

# Every test layer (tests/README.md), the coverage report, then the compat suite: scripts/test_all.sh.
test: bootstrap
	@scripts/test_all.sh

# The fast loop: lint and the unit layer only.
test-unit: bootstrap
	@$(VENV)/bin/ruff check .
	@$(PY) -m pytest --durations=15 tests/unit

# Only the Databricks path (data sources, Spark decoding) under each PySpark Databricks runs: 4.0.0
# (pipelines CURRENT, serverless env 4) and 4.1.0 (pipelines PREVIEW, serverless env 5), one
# .venv-compat-<version> each; `make test` runs it after the main suite.
test-compat:
	@scripts/compat_tests.sh

lint: bootstrap
	@$(VENV)/bin/ruff check .
	@$(VENV)/bin/ruff format --check .
	@$(VENV)/bin/lint-imports --no-cache --no-logo

format: bootstrap
	@$(VENV)/bin/ruff check --fix .
	@$(VENV)/bin/ruff format .

bench: bootstrap
	@for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

up: bootstrap
	@$(PY) -m offsetlake_dev local up

down:
	@[ ! -x $(PY) ] || $(PY) -m offsetlake_dev local down

lock: bootstrap
	@$(PY) -m pip freeze --exclude-editable | sed '1i # Full resolved set for reproducible installs (pip install -c constraints.txt). Regenerate with `make lock`.' > constraints.txt

clean: down
	rm -rf .offsetlake spark-warehouse metastore_db derby.log .pytest_cache .hypothesis .coverage .coverage.*
