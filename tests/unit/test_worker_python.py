"""The Python-worker launcher: Spark's archives off the path, everything else kept, this interpreter run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from offsetlake.local.home import LocalHome
from offsetlake.local.pipeline_spec import spark_env
from offsetlake.local.worker_python import installed_pyspark, worker_python

_SHOW = "import json, os, sys; print(json.dumps([os.environ.get('PYTHONPATH'), sys.argv[1:]]))"


def _run(launcher: Path, pythonpath: str | None, *args: str) -> tuple[str | None, list[str]]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run(
        [str(launcher), "-c", _SHOW, *args], env=env, capture_output=True, text=True, check=True
    )
    seen, argv = json.loads(out.stdout)
    return seen, argv


def test_the_launcher_drops_its_pysparks_archives_and_keeps_every_other_entry(tmp_path: Path) -> None:
    spark_home = "/opt/spark home/pyspark"
    launcher = worker_python(tmp_path / "bin", pyspark_dir=Path(spark_home))
    path = ":".join(
        [
            f"{spark_home}/python/lib/pyspark.zip",
            f"{spark_home}/python/lib/py4j-0.10.9.9-src.zip",
            f"{spark_home}/jars/spark-core_2.13-4.1.0.jar",
            "/mine/src",
            "/other/spark/python/lib/pyspark.zip",
            "/theirs/deps.zip",
            "/literal/*",
        ]
    )
    seen, argv = _run(launcher, path, "an argument with spaces", "*")
    assert seen == "/mine/src:/other/spark/python/lib/pyspark.zip:/theirs/deps.zip:/literal/*"
    assert argv == ["an argument with spaces", "*"]


def test_a_pyspark_reached_through_a_symlink_is_matched_by_either_path(tmp_path: Path) -> None:
    real = tmp_path / "real" / "pyspark"
    real.mkdir(parents=True)
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    launcher = worker_python(tmp_path / "bin", pyspark_dir=tmp_path / "linked" / "pyspark")
    both = f"{real}/python/lib/pyspark.zip:{tmp_path}/linked/pyspark/jars/spark-core_2.13-4.2.0.jar:/kept"
    assert _run(launcher, both) == ("/kept", [])


def test_only_sparks_archives_leave_no_pythonpath_at_all(tmp_path: Path) -> None:
    launcher = worker_python(tmp_path, pyspark_dir=Path("/s"))
    assert _run(launcher, "/s/python/lib/pyspark.zip:/s/jars/spark-core_2.13-4.0.0.jar") == (None, [])
    assert _run(launcher, None) == (None, [])


def test_the_installed_pyspark_is_the_one_this_interpreter_imports() -> None:
    import pyspark

    assert installed_pyspark() == Path(pyspark.__file__).parent


def test_the_launcher_runs_the_interpreter_it_is_named_for(tmp_path: Path) -> None:
    mine = worker_python(tmp_path)
    other = worker_python(tmp_path, "/nonexistent/python3")
    assert mine != other
    out = subprocess.run(
        [str(mine), "-c", "import sys; print(sys.executable)"], capture_output=True, text=True, check=True
    )
    assert Path(out.stdout.strip()).resolve() == Path(sys.executable).resolve()
    failed = subprocess.run([str(other), "-c", "pass"], capture_output=True, text=True, check=False)
    assert failed.returncode == 127 and "/nonexistent/python3" in failed.stderr


def test_an_unchanged_launcher_is_left_alone_and_a_changed_one_replaced(tmp_path: Path) -> None:
    launcher = worker_python(tmp_path)
    before = launcher.stat()
    assert worker_python(tmp_path) == launcher
    assert launcher.stat().st_ino == before.st_ino
    launcher.write_text("#!/bin/sh\nexit 3\n")
    assert worker_python(tmp_path) == launcher
    assert _run(launcher, None) == (None, [])
    launcher.chmod(0o644)
    worker_python(tmp_path)
    assert os.access(launcher, os.X_OK)
    assert [p.name for p in tmp_path.iterdir()] == [launcher.name], "no partial file left behind"


def test_every_local_spark_process_starts_its_workers_through_the_homes_launcher(tmp_path: Path) -> None:
    home = LocalHome(tmp_path)
    env = spark_env(home, None)
    assert Path(env["PYSPARK_PYTHON"]) == worker_python(home.bin_dir)
    assert env["PYSPARK_DRIVER_PYTHON"] == sys.executable
