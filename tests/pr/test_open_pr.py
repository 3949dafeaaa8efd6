"""`--open-pr`: gh pr create with the description, or the exact commands when gh cannot."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
from pathlib import Path

import pytest

from tests.pr.conftest import git
from tests.pr.test_branch import PROJECT

FAKE_GH = """#!{python}
import json, os, sys
with open({log!r}, "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["auth", "status"]:
    sys.exit({auth_code})
print("https://github.com/example/repo/pull/7")
"""


def fake_gh(directory: Path, log: Path, auth_code: int = 0) -> None:
    import sys

    directory.mkdir(exist_ok=True)
    gh = directory / "gh"
    gh.write_text(FAKE_GH.format(python=sys.executable, log=str(log), auth_code=auth_code))
    gh.chmod(gh.stat().st_mode | stat.S_IXUSR)


def only_git_on_path(directory: Path) -> str:
    """A PATH with git (and what git needs) but surely no gh."""
    directory.mkdir(exist_ok=True)
    (directory / "git").symlink_to(shutil.which("git"))
    return str(directory)


@pytest.fixture
def repo_with_remote(make_repo, tmp_path):
    repo = make_repo(PROJECT)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    return repo, remote


def calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_open_pr_pushes_and_calls_gh_pr_create(
    repo_with_remote, tpu_migrate, tmp_path, monkeypatch
):
    repo, remote = repo_with_remote
    log = tmp_path / "gh.log"
    fake_gh(tmp_path / "bin", log)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    body = tmp_path / "pr.md"
    outcome = tpu_migrate(
        repo, "apply", ".", "--branch", "tpu/migrate", "--pr-body", str(body), "--open-pr"
    )
    assert outcome.code == 0, outcome.err
    assert calls(log) == [
        ["auth", "status"],
        [
            "pr",
            "create",
            "--title",
            "Migrate to torch_xla (TPU): 4 rules, 4 files",
            "--body-file",
            str(body),
            "--head",
            "tpu/migrate",
            "--base",
            "main",
        ],
    ]
    assert body.read_text() in outcome.out
    assert "https://github.com/example/repo/pull/7" in outcome.out
    assert git(remote, "rev-parse", "tpu/migrate") == git(repo, "rev-parse", "tpu/migrate")


def test_without_gh_the_exact_commands_are_printed(
    repo_with_remote, tpu_migrate, tmp_path, monkeypatch
):
    repo, remote = repo_with_remote
    monkeypatch.setenv("PATH", only_git_on_path(tmp_path / "bin"))
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "migrate", "--open-pr")
    assert outcome.code == 2
    assert "the GitHub CLI `gh` is not installed" in outcome.err
    body = repo / ".git" / "tpu-migrate" / "migrate.md"
    command = (
        "git push --set-upstream origin migrate && gh pr create --title "
        + shlex.quote("Migrate to torch_xla (TPU): 4 rules, 4 files")
        + f" --body-file {body} --head migrate --base main"
    )
    assert f"  {command}\n" in outcome.err
    assert body.read_text() in outcome.out
    assert git(repo, "branch", "--show-current").strip() == "migrate"
    assert git(remote, "branch", "--list", "migrate") == ""  # nothing was pushed


def test_gh_not_logged_in_is_told_and_nothing_is_pushed(
    repo_with_remote, tpu_migrate, tmp_path, monkeypatch
):
    repo, remote = repo_with_remote
    log = tmp_path / "gh.log"
    fake_gh(tmp_path / "bin", log, auth_code=1)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "migrate", "--open-pr")
    assert outcome.code == 2
    assert "gh is not logged in to GitHub (run `gh auth login`)" in outcome.err
    assert "gh pr create --title" in outcome.err
    assert calls(log) == [["auth", "status"]]
    assert git(remote, "branch", "--list", "migrate") == ""
