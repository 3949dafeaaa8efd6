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
FILES = 100  # the runs below stop at the 10th or 11th file: well before the end
TMP_SUFFIX = ".tpu-migrate.tmp"  # write_atomically's temporary files


def _tree(root: Path) -> None:
    for i in range(FILES):
        (root / f"m{i:03}.py").write_text(OLD_API + f"value = {i}\n" * 50)


def _env(root: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "TPU_MIGRATE_CACHE_DIR": str(root / ".cache")}


def _apply(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "migrate", "apply", "-j", "1", "--no-cache", str(root)],
        capture_output=True,
        text=True,
        env=_env(root),
        timeout=600,
    )


# Runs `tpu-migrate apply` that stops at one point of the run, creates the flag file and waits
# there to be interrupted or killed: the signal lands part-way through, where a real one could,
# however busy the machine is (sent at a time of the test's choosing, it could arrive once the
# run was over). The points:
#   report N: in the report of the Nth file written, outside the block where Ctrl-C is deferred;
#   rename N: the Nth file's new text complete in its temporary file, not renamed over it yet.
PAUSING_DRIVER = """
import os, pathlib, sys, time
import migrate.cli as cli
import migrate.commands as commands

flag, point, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = 0

def wait_here():
    pathlib.Path(flag).write_text(point)
    time.sleep(600)  # until the test's signal

if point == "report":
    applied_text = commands.applied_text

    def report_then_wait(applied):
        global seen
        seen += 1
        if seen == n:
            wait_here()
        return applied_text(applied)

    commands.applied_text = report_then_wait
elif point == "rename":
    replace = os.replace

    def wait_then_rename(src, dst):
        global seen
        if str(src).endswith(".tpu-migrate.tmp"):
            seen += 1
            if seen == n:
                wait_here()
        return replace(src, dst)

    os.replace = wait_then_rename
else:
    sys.exit(f"unknown point {point!r}")
sys.exit(cli.main(sys.argv[4:]))
"""


def _paused_apply(tmp_path: Path, root: Path, point: str, n: int) -> subprocess.Popen:
    """`tpu-migrate apply -j 1 ROOT`, returned once it waits at ``point`` (see above)."""
    flag = tmp_path / "paused"
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSING_DRIVER, str(flag), point, str(n)]
        + ["apply", "-j", "1", "--no-cache", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(root),
        start_new_session=True,
    )
    deadline = time.monotonic() + 300  # (only if the run never gets there)
    while not flag.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if not flag.exists():
        _stop(proc)
        raise AssertionError(f"the run did not stop at {point} {n}:\n{proc.communicate()[1]}")
    return proc


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_sigkill_leaves_every_file_old_or_new(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    _tree(root)
    old = {p.name: p.read_text() for p in root.glob("m*.py")}
    proc = _paused_apply(tmp_path, root, "rename", 11)  # the worst moment: mid-write
    try:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        _stop(proc)
    new_count = 0
    for path in root.glob("m*.py"):
        text = path.read_text()
        expected_new = NEW_API + old[path.name][len(OLD_API) :]
        assert text in (old[path.name], expected_new), path.name
        new_count += text == expected_new
    assert new_count == 10
    leftovers = [p.name for p in root.iterdir() if p.name.endswith(TMP_SUFFIX)]
    assert len(leftovers) == 1  # the one being written at the moment of the kill
    # The next run finishes the job; a leftover temporary file is not a .py file, never migrated.
    finish = _apply(root)
    assert finish.returncode == 0, finish.stderr
    assert all(p.read_text().startswith(NEW_API) for p in root.glob("m*.py"))


def test_ctrl_c_stops_and_says_what_was_written(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    _tree(root)
    proc = _paused_apply(tmp_path, root, "report", 10)
    try:
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
        out, err = proc.communicate(timeout=120)
    finally:
        _stop(proc)
    assert proc.returncode == 130, err
    assert "interrupted:" in err and "file(s) were written completely" in err
    assert "every other file is unchanged" in err
    assert "Traceback" not in err
    written = [p for p in root.glob("m*.py") if p.read_text().startswith(NEW_API)]
    reported = int(err.split("interrupted: ")[1].split(" file(s)")[0])
    assert reported == len(written) == 10
    assert not [p.name for p in root.iterdir() if p.name.endswith(TMP_SUFFIX)]
