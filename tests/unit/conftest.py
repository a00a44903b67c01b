"""The unit layer's promise: no Spark, no Kafka broker, so the whole layer runs in under a minute.

A unit test that asks for one of the fixtures below (directly or through another fixture) fails
at once, saying where it belongs instead (tests/integration, tests/harness or tests/e2e).

The check is a setup hook rather than an autouse fixture: pytest sets up session-scoped fixtures
(``spark``, ``kafka_clusters``) before function-scoped ones, so an autouse fixture would only fail
the test once Spark or the brokers had started. The hook sees the test's whole fixture closure
(``item.fixturenames``, what ``request.fixturenames`` holds) before any fixture is set up.
"""

from __future__ import annotations

import pytest

from offsetlake.local.jit import JIT_ENV, Jit

# tests/conftest.py's fixtures that start a Spark session or the Kafka cluster pair.
FORBIDDEN_IN_UNIT = ("spark", "kafka_clusters", "source_bootstrap", "target_bootstrap")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    asked = [name for name in FORBIDDEN_IN_UNIT if name in getattr(item, "fixturenames", ())]
    if asked:
        pytest.fail(
            f"{item.nodeid} asks for {', '.join(asked)}: unit tests run without Spark and without "
            "brokers; move the test to tests/integration (or tests/harness, tests/e2e)",
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def _no_backlog_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    """An update's JIT is chosen by asking the target how much it holds (local/jit.py); unit tests
    that run an update against a stand-in engine have no target to ask, so the choice is fixed."""
    monkeypatch.setenv(JIT_ENV, Jit.QUICK.value)
