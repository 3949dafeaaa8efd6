"""Killed or interrupted runs never leave a file half-written, and Ctrl-C says what happened."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import NEW_API, OLD_API

pytestmark = pytest.mark.slow  # migrates 100-file trees in subprocesses

REPO = Path(__file__).resolve().parents[2]
FILES = 100  # enough that the kill lands part-way through the writes, small enough for CI


def _tree(root: Path) -> None:
    for i in range(FILES):
        (root / f"m{i:03}.py").write_text(OLD_API + f"value = {i}\n" * 50)


def _start(root: Path, *argv: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TPU_MIGRATE_CACHE_DIR": str(root / ".cache")}
    return subprocess.Popen(
        [sys.executable, "-m", "migrate", "apply", "-j", "1", "--no-cache", *argv, str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def _wait_for_first_write(root: Path, proc: subprocess.Popen) -> None:
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if any("torch_xla.sync()" in p.read_text() for p in root.glob("m*.py")):
            return
        time.sleep(0.05)


def test_sigkill_leaves_every_file_old_or_new(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    _tree(root)
    old = {p.name: p.read_text() for p in root.glob("m*.py")}
    proc = _start(root)
    _wait_for_first_write(root, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    new_count = 0
    for path in root.glob("m*.py"):
        text = path.read_text()
        expected_new = NEW_API + old[path.name][len(OLD_API) :]
        assert text in (old[path.name], expected_new), path.name
        new_count += text == expected_new
    assert 0 < new_count <= FILES
    leftovers = [p.name for p in root.iterdir() if p.name.endswith(".tpu-migrate.tmp")]
    assert len(leftovers) <= 1  # at most the one being written at the moment of the kill
    # The next run finishes the job; a leftover temporary file is not a .py file, never migrated.
    finish = _start(root)
    assert finish.wait(timeout=600) == 0, finish.stderr.read()
    assert all(p.read_text().startswith(NEW_API) for p in root.glob("m*.py"))


# Runs `tpu-migrate apply` that waits once the tenth file is written and reported (outside the
# block where Ctrl-C is deferred): the Ctrl-C lands part-way through the run, however busy the
# machine is, where a real one would.
PAUSING_DRIVER = """
import pathlib, sys, time
import migrate.cli as cli
import migrate.commands as commands

reported = 0
applied_text = commands.applied_text

def report_then_wait(applied):
    global reported
    reported += 1
    if reported == 10:
        pathlib.Path(sys.argv[1]).write_text("paused")
        time.sleep(600)
    return applied_text(applied)

commands.applied_text = report_then_wait
sys.exit(cli.main(sys.argv[2:]))
"""


def test_ctrl_c_stops_and_says_what_was_written(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    _tree(root)
    paused = tmp_path / "paused"
    env = {**os.environ, "PYTHONPATH": str(REPO), "TPU_MIGRATE_CACHE_DIR": str(root / ".cache")}
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSING_DRIVER, str(paused), "apply", "-j", "1", "--no-cache"]
        + [str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    deadline = time.time() + 300
    while not paused.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert paused.exists(), proc.communicate()[1]
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted:" in err and "file(s) were written completely" in err
    assert "every other file is unchanged" in err
    assert "Traceback" not in err
    written = [p for p in root.glob("m*.py") if p.read_text().startswith(NEW_API)]
    reported = int(err.split("interrupted: ")[1].split(" file(s)")[0])
    assert reported == len(written) == 10
