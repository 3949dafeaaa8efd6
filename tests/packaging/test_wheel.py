"""The built wheel works on its own: it carries every file the tool reads at run time, and
`tpu-migrate verify`, installed from it into a fresh virtualenv, proves a fixture's migration.

The fresh virtualenv sees this environment's packages (torch and torch_xla are 7 GB) through a
.pth file written after the wheel is installed, with --no-deps; the tool runs outside the checkout,
and is checked to be imported from the new virtualenv. The build needs setuptools from an index:
skipped when pip reaches none.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.packaging.helpers import REPO, copy_of_the_work_tree, env, skip_without_index

pytestmark = pytest.mark.slow

FIXTURE = REPO / "fixtures" / "classic_cuda"  # one of test_verify_runs' fixtures, and small


def _pip(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        cwd=cwd,
        env=env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel of the work tree as it is, built from a copy (setuptools writes build/ beside
    the sources) the way pip builds it for a user: isolated, with setuptools from the index."""
    source = copy_of_the_work_tree(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("wheel")
    done = _pip("wheel", "--no-deps", "--wheel-dir", str(out), str(source), cwd=out)
    if done.returncode != 0:
        skip_without_index("the wheel could not be built", done.stdout + done.stderr)
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = out.glob("tpu_migrate-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A new virtualenv with the wheel installed, then given this environment's packages."""
    root = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    # installed before the .pth exists, so pip sees no tpu-migrate (this environment may have one)
    done = _pip("--python", str(python), "install", "--no-deps", str(wheel), cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (Path(site) / "project_env.pth").write_text("".join(f"{path}\n" for path in ours))
    return root


def test_the_wheel_carries_what_the_tool_reads_at_run_time(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "migrate/pr/templates/pr_body.md.j2" in names  # the PR description's template
    assert "migrate/verify/bootstrap/sitecustomize.py" in names  # verify's run instrumentation
    bootstrap = {n for n in names if n.startswith("migrate/verify/bootstrap/_tpu_migrate_verify/")}
    expected = {
        path.relative_to(REPO).as_posix()
        for path in (REPO / "migrate/verify/bootstrap/_tpu_migrate_verify").glob("*.py")
    }
    assert bootstrap == expected
    assert "codemods/tpu101_device_placement.py" in names
    assert not any(n.startswith(("codemods/cases/", "tests/", "fixtures/")) for n in names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "tpu-migrate = migrate.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.xla
def test_verify_from_the_installed_wheel_finds_the_migration_equivalent(venv, tmp_path):
    if not os.environ.get("CI"):  # CI installs torch_xla: a skip there would hide a failure
        pytest.importorskip("torch_xla")
    project = shutil.copytree(FIXTURE / "before", tmp_path / "project")  # outside the checkout
    run_env = env(TPU_MIGRATE_CACHE_DIR=str(tmp_path / "cache"))

    where = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import migrate, codemods, torch_xla; "
            "print(migrate.__file__); print(codemods.__file__)",
        ],
        cwd=project,
        env=run_env,
        capture_output=True,
        text=True,
    )
    assert where.returncode == 0, where.stderr
    for module in where.stdout.splitlines():  # the wheel's, not the checkout's
        assert Path(module).resolve().is_relative_to(venv.resolve()), module

    result = tmp_path / "result.json"
    done = subprocess.run(
        [str(venv / "bin" / "tpu-migrate"), "verify", "train.py", "--json", str(result)]
        + ["--", "--epochs", "1"],
        cwd=project,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    verdict = json.loads(result.read_text())
    assert verdict["verdict"] == "equivalent", done.stdout
    assert any(note.startswith("migrated into a temporary shadow") for note in verdict["notes"])
    assert "verdict: equivalent" in done.stdout
    assert (project / "train.py").read_text() == (FIXTURE / "before" / "train.py").read_text()
