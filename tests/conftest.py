"""Shared pytest fixtures: the Kafka cluster pair, unique names, a local Spark session, a private home.

Kafka: set OFFSETLAKE_TEST_SOURCE_BOOTSTRAP and OFFSETLAKE_TEST_TARGET_BOOTSTRAP to run against a
real Kafka pair (never started or stopped here); otherwise one pair of local Tansu brokers is
started per session on free ports. Spark starts only if a test asks for ``spark``.
"""

from __future__ import annotations

import atexit
import hashlib
import itertools
import os
import re
import shutil
import signal
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Final

import pytest
from hypothesis import settings

from offsetlake.local.class_archive import class_archive_options
from offsetlake.local.home import HOME_ENV
from offsetlake.local.spark import LOCAL_JVM_OPTIONS, LOCAL_SQL_CONF
from offsetlake.local.worker_python import worker_python
from offsetlake.pipeline.generated_code import GENERATED as PIPELINE_GENERATED
from offsetlake.pipeline.generated_code import INTERPRETED as PIPELINE_INTERPRETED
from tests.kafka_helpers import ClustersUnderTest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SOURCE_BOOTSTRAP_ENV = "OFFSETLAKE_TEST_SOURCE_BOOTSTRAP"
TARGET_BOOTSTRAP_ENV = "OFFSETLAKE_TEST_TARGET_BOOTSTRAP"

# Distinguishes this session's names from earlier sessions' on a long-lived real cluster.
_SESSION_TOKEN = uuid.uuid4().hex[:6]
_UNSAFE_NAME_CHARS = re.compile(r"[^a-zA-Z0-9._-]")

# No hypothesis test may depend on the machine's speed: a busy machine (a second test run, other
# agents) took 244 ms over the default 200 ms deadline for one example of a pure function. A test's
# own @settings may still change max_examples; the deadline stays off unless it sets one.
settings.register_profile("offsetlake", deadline=None)
settings.load_profile("offsetlake")

# Python data sources and UDFs run in sc.pythonExec, which comes from PYSPARK_PYTHON only (default
# "python3", which cannot import offsetlake), not from spark.pyspark.python. Set for the whole
# session, not only by the `spark` fixture: a test that runs the CLI in-process starts the local
# Spark session (offsetlake.local.spark), and the fixture's getOrCreate() returns that session when
# it is still running. Through the local runtime's launcher (offsetlake/local/worker_python.py), as
# in a pipeline update: the workers import PySpark with its bytecode cached, not from Spark's zip.
_WORKER_PYTHON_DIR = Path(tempfile.mkdtemp(prefix="offsetlake-worker-python-"))
atexit.register(shutil.rmtree, _WORKER_PYTHON_DIR, ignore_errors=True)
os.environ["PYSPARK_PYTHON"] = str(worker_python(_WORKER_PYTHON_DIR))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Under ``--dist loadfile`` (`make test`), a worker's next module only at its last test
    (tests/xdist_scheduling.py); any other mode is xdist's own. Optional: the compat environments
    run without xdist."""
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.xdist_scheduling import LastMomentLoadFileScheduling

    return LastMomentLoadFileScheduling(config, log)


@pytest.fixture(scope="session")
def kafka_clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClustersUnderTest]:
    source = os.environ.get(SOURCE_BOOTSTRAP_ENV)
    target = os.environ.get(TARGET_BOOTSTRAP_ENV)
    if source and target:
        yield ClustersUnderTest(source, target, is_tansu=False)
        return
    if source or target:
        pytest.fail(f"set both {SOURCE_BOOTSTRAP_ENV} and {TARGET_BOOTSTRAP_ENV}, or neither")

    from offsetlake_dev.local_cluster import running_clusters

    # The brokers run detached, so a session killed by SIGTERM (`timeout pytest ...`) would leave
    # them behind: turn SIGTERM into an interrupt, which pytest answers by tearing fixtures down.
    previous_handler = signal.signal(signal.SIGTERM, _interrupt)
    try:
        # preferred_ports=None: leave 19092/29092 to a developer's own `make up`.
        with running_clusters(tmp_path_factory.mktemp("kafka_home"), preferred_ports=None) as pair:
            yield ClustersUnderTest(
                pair.source.bootstrap_servers, pair.target.bootstrap_servers, is_tansu=True
            )
    finally:
        signal.signal(signal.SIGTERM, previous_handler)


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def source_bootstrap(kafka_clusters: ClustersUnderTest) -> str:
    return kafka_clusters.source_bootstrap


@pytest.fixture(scope="session")
def target_bootstrap(kafka_clusters: ClustersUnderTest) -> str:
    return kafka_clusters.target_bootstrap


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``unique_name("orders")`` -> a topic/group name no other test or session uses."""
    test_hash = hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:8]
    counter = itertools.count()

    def make(prefix: str) -> str:
        return f"{_UNSAFE_NAME_CHARS.sub('-', prefix)}-{test_hash}-{_SESSION_TOKEN}-{next(counter)}"

    return make


WHOLE_STAGE: Final = "spark.sql.codegen.wholeStage"
INTERPRETED: Final = {WHOLE_STAGE: "false", **PIPELINE_INTERPRETED}
"""The tests' session evaluates expressions without generating code: on their small inputs compiling
costs more than it saves (five integration modules 217 -> 191 s, issue 36) and results are the same.
The pipeline scenarios (tests/e2e) run the local runtime's own settings; tests about the generated
code itself ask for it with ``generated_code``."""
GENERATED: Final = {WHOLE_STAGE: "true", **PIPELINE_GENERATED}
"""Spark's defaults."""


@pytest.fixture
def generated_code(spark: SparkSession) -> Iterator[None]:
    """Spark's default code generation for one test: whole-stage code, generated projections."""
    for key, value in GENERATED.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in INTERPRETED.items():
            spark.conf.set(key, value)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """A lean local Spark session; Python workers use this interpreter so they can import offsetlake."""
    from pyspark.sql import SparkSession

    warehouse = tmp_path_factory.mktemp("spark_warehouse")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("offsetlake-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config(map=LOCAL_SQL_CONF | INTERPRETED)
        .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
        .config("spark.pyspark.driver.python", sys.executable)
        # The local JVM options and the class-data archive when there is one; a JVM living for the
        # whole run never writes it (it would hold the claim, local/class_archive.py).
        .config(
            "spark.driver.extraJavaOptions",
            f"{LOCAL_JVM_OPTIONS} {class_archive_options('session', LOCAL_JVM_OPTIONS, write=False)}",
        )
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture
def offsetlake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private $OFFSETLAKE_HOME for the test."""
    home = tmp_path / "offsetlake_home"
    home.mkdir()
    monkeypatch.setenv(HOME_ENV, str(home))
    return home
