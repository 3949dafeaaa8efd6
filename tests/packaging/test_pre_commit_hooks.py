"""The shipped pre-commit hooks (``.pre-commit-hooks.yaml``) as a user gets them.

``pre-commit try-repo`` builds the hooks' own virtualenv by pip-installing this repository (from a
committed snapshot of the work tree as it is, uncommitted changes included), then runs every hook
on the files of a fresh git repository: one file to migrate, one clean file. About 20 s a run,
most of it pip; skipped when pip cannot reach a package index to build that virtualenv.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging.helpers import copy_of_the_work_tree, env, git, skip_without_index

pytest.importorskip("pre_commit", reason="pre-commit is not installed (the [dev] extra has it)")

pytestmark = pytest.mark.slow

NEEDS_MIGRATION = """\
import torch

model = torch.nn.Linear(4, 2).cuda()
x = torch.randn(3, 4).cuda()
print(model(x))
"""
CLEAN = """\
import torch

x = torch.ones(3)
print(x.sum())
"""


@pytest.fixture(scope="module")
def hooks_repo(tmp_path_factory) -> Path:
    """The work tree as it is, committed in a new repository: try-repo takes only what is
    committed (and changes to tracked files), and would miss an uncommitted new file."""
    snapshot = copy_of_the_work_tree(tmp_path_factory.mktemp("hooks-repo"))
    git(snapshot, "init", "-q")
    git(snapshot, "add", "-A")
    git(snapshot, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "snapshot")
    return snapshot


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "user-repo"
    repo.mkdir()
    (repo / "needs_migration.py").write_text(NEEDS_MIGRATION)
    (repo / "clean.py").write_text(CLEAN)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    return repo


def try_repo(hooks: Path, cwd: Path, *files: str, hook: str | None = None):
    """``pre-commit try-repo`` of ``hook`` (default: every hook, in the order of their ids)."""
    home = cwd.parent / "pre-commit-home"
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(hooks)]
    if hook:
        command.append(hook)
    done = subprocess.run(
        [*command, "--files", *files],
        cwd=cwd,
        env=env(PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = home / "pre-commit.log"
    if done.returncode not in (0, 1):  # 3: pre-commit's own error, such as a failed install
        said = done.stdout + done.stderr + (log.read_text() if log.is_file() else "")
        skip_without_index("pre-commit could not build the hooks' virtualenv", said)
    return done


STATUS_LINE = re.compile(r"^(?P<name>\S.*?)\.{3,}(\(.*\))?(Passed|Failed|Skipped)$")


def hook_report(output: str, name: str) -> str:
    """One hook's part of pre-commit's output: its status line and what it printed."""
    lines = output.splitlines()
    starts = [i for i, line in enumerate(lines) if STATUS_LINE.match(line)]
    start = next(i for i in starts if STATUS_LINE.match(lines[i])["name"] == name)
    end = next((i for i in starts if i > start), len(lines))
    return "\n".join(lines[start:end]).strip()


def test_check_fails_on_code_to_migrate_and_says_what_applies(hooks_repo, user_repo):
    done = try_repo(
        hooks_repo, user_repo, "needs_migration.py", "clean.py", hook="tpu-migrate-check"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    check = hook_report(done.stdout, "tpu-migrate check")
    assert check.splitlines()[0].endswith("Failed"), check
    assert "- exit code: 1" in check
    assert "needs_migration.py: would apply TPU127 x2" in check
    assert "clean.py:" not in check
    assert "1 file would change, 1 unchanged." in check  # clean.py was checked too
    assert (user_repo / "needs_migration.py").read_text() == NEEDS_MIGRATION
    assert (user_repo / "clean.py").read_text() == CLEAN


def test_apply_rewrites_and_check_then_passes_on_clean_code(hooks_repo, user_repo):
    """Both hooks, apply first (as README's example lists them): apply stops the commit on its
    rewrite, and check passes on what is then clean, the rewritten file and the clean one."""
    done = try_repo(hooks_repo, user_repo, "needs_migration.py", "clean.py")
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert out.index("tpu-migrate apply.") < out.index("tpu-migrate check.")

    apply = hook_report(out, "tpu-migrate apply")
    assert apply.splitlines()[0].endswith("Failed"), apply
    assert "- files were modified by this hook" in apply
    assert "needs_migration.py: TPU127 x2" in apply
    migrated = (user_repo / "needs_migration.py").read_text()
    assert ".cuda()" not in migrated and "torch_xla.device()" in migrated
    assert (user_repo / "clean.py").read_text() == CLEAN

    check = hook_report(out, "tpu-migrate check")
    assert check.splitlines()[0].endswith("Passed"), check
