"""The job wheel holds the product only: built for real, then every product module imported from it
with the development harness (offsetlake_dev) absent from the interpreter's path."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# Pipeline source files: the pipeline engine executes them (they build a Spark session on import).
NOT_IMPORTABLE = "offsetlake/pipeline/transformations/"

IMPORT_ALL = """
import importlib, importlib.util, sys
assert importlib.util.find_spec("offsetlake_dev") is None, "the harness is on the path"
wheel = sys.path[0]
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    assert module.__file__.startswith(wheel), (name, module.__file__)
print(len(sys.argv) - 1)
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built by the command `databricks bundle deploy` runs (databricks.yml's artifact, through bash
    as the CLI runs it), with this interpreter for ``python3`` and a temporary directory for
    ``dist``; a stale module left in ./build by an earlier build must not ship."""
    out = tmp_path_factory.mktemp("wheel")
    bin_dir = tmp_path_factory.mktemp("bin")
    (bin_dir / "python3").symlink_to(sys.executable)
    (artifact,) = yaml.safe_load((ROOT / "databricks.yml").read_text())["artifacts"].values()
    command = artifact["build"]
    assert " --wheel-dir dist " in command, command
    stale = ROOT / artifact["path"] / "build" / "lib" / "offsetlake" / "stale_module_from_an_old_build.py"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("", encoding="utf-8")
    subprocess.run(
        ["bash", "-c", command.replace(" --wheel-dir dist ", f" --wheel-dir {shlex.quote(str(out))} ")],
        cwd=ROOT / artifact["path"],
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("offsetlake-*.whl")
    return built


def test_no_stale_build_output_ships(wheel: Path) -> None:
    assert not [name for name in zipfile.ZipFile(wheel).namelist() if "stale_module" in name]


def test_the_wheel_holds_the_product_and_no_harness(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    packages = {name.split("/")[0] for name in names if not name.startswith("offsetlake-")}
    assert packages == {"offsetlake"}, packages
    assert "offsetlake/cli/main.py" in names
    assert "offsetlake/local/log4j2.properties" in names
    assert not [name for name in names if "simulate" in name or "demo" in name or "local_cluster" in name]


def test_every_product_module_imports_without_the_harness(wheel: Path, tmp_path: Path) -> None:
    unpacked = tmp_path / "wheel"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    modules = sorted(
        str(path.relative_to(unpacked).with_suffix("")).replace("/", ".").removesuffix(".__init__")
        for path in unpacked.rglob("*.py")
        if NOT_IMPORTABLE not in path.relative_to(unpacked).as_posix() and path.name != "__main__.py"
    )
    # -S: no site processing, so the editable install's .pth (which maps all of src/) is not read;
    # third-party packages come from site-packages on PYTHONPATH, the product from the wheel.
    site_packages = sysconfig.get_paths()["purelib"]
    completed = subprocess.run(
        [sys.executable, "-S", "-c", IMPORT_ALL, *modules],
        env={"PYTHONPATH": f"{unpacked}:{site_packages}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert int(completed.stdout.strip()) == len(modules) > 30


def test_the_development_environment_has_the_harness() -> None:
    import offsetlake_dev

    assert Path(offsetlake_dev.__file__).parent == ROOT / "src" / "offsetlake_dev"
