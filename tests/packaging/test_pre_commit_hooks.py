"""The shipped pre-commit hooks (``.pre-commit-hooks.yaml``) as a user gets them.

``pre-commit try-repo`` builds the hooks' own virtualenv by pip-installing this repository (from a
committed snapshot of the work tree as it is, uncommitted changes included), then runs every hook
on the files of a fresh git repository: one file to migrate, one clean file. About 20 s a run,
most of it pip; skipped when pip cannot reach a package index to build that virtualenv.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pre_commit", reason="pre-commit is not installed (the [dev] extra has it)")

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

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

# pip's words when no index answers: the hooks' virtualenv cannot be built here
NO_INDEX = (
    "Could not find a version that satisfies the requirement",
    "No matching distribution found",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "Max retries exceeded",
)


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _env(**extra: str) -> dict[str, str]:
    """The environment less git's own variables (the suite may run inside a git hook)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**env, "PRE_COMMIT_COLOR": "never", **extra}


@pytest.fixture(scope="module")
def hooks_repo(tmp_path_factory) -> Path:
    """This repository's tracked and untracked-not-ignored files, committed in a new repository:
    try-repo takes only what is committed (and changes to tracked files), so an uncommitted
    .pre-commit-hooks.yaml or a new module would otherwise be missed."""
    try:
        listed = _git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: no files to snapshot for pre-commit try-repo")
    snapshot = tmp_path_factory.mktemp("hooks-repo")
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # (a tracked file deleted in the work tree is not)
            (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, snapshot / name)
    _git(snapshot, "init", "-q")
    _git(snapshot, "add", "-A")
    _git(snapshot, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "snapshot")
    return snapshot


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "user-repo"
    repo.mkdir()
    (repo / "needs_migration.py").write_text(NEEDS_MIGRATION)
    (repo / "clean.py").write_text(CLEAN)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
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
        env=_env(PRE_COMMIT_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = home / "pre-commit.log"
    said = done.stdout + done.stderr + (log.read_text() if log.is_file() else "")
    if done.returncode not in (0, 1):  # 3: pre-commit's own error, such as a failed install
        lines = [line.strip() for line in said.splitlines()]
        why = list(dict.fromkeys(line for line in lines if any(w in line for w in NO_INDEX)))
        if why:
            pytest.skip(
                "pre-commit could not build the hooks' virtualenv, pip reached no package index: "
                + " / ".join(why[:3])
            )
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
    assert "needs_migration.py: would apply TPU101 x2" in check
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
    assert "needs_migration.py: TPU101 x2" in apply
    migrated = (user_repo / "needs_migration.py").read_text()
    assert ".cuda()" not in migrated and "torch_xla.device()" in migrated
    assert (user_repo / "clean.py").read_text() == CLEAN

    check = hook_report(out, "tpu-migrate check")
    assert check.splitlines()[0].endswith("Passed"), check
