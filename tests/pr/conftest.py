"""Real temporary git repositories for `apply --branch`, with an identity only in the environment."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from migrate.cli import main

IDENTITY = {
    "GIT_AUTHOR_NAME": "Ada Reviewer",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Reviewer",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}


@pytest.fixture(autouse=True)
def isolated_git(tmp_path, monkeypatch):
    """No user or system git configuration leaks in; the identity comes from GIT_* variables."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)
    for name in ("EMAIL", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)
    cwd = os.getcwd()
    yield
    os.chdir(cwd)


def git(repo: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {proc.stderr}")
    return proc.stdout


@dataclass
class Outcome:
    code: int
    out: str
    err: str


@pytest.fixture
def make_repo(tmp_path):
    """make_repo({"a.py": "..."}) or make_repo(directory) -> a git repo with one commit on main."""

    def make(files: dict[str, str] | Path, name: str = "repo") -> Path:
        root = tmp_path / name
        if isinstance(files, Path):
            shutil.copytree(files, root)
        else:
            for relative, text in files.items():
                path = root / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
        git(root.parent, "init", "-q", "-b", "main", str(root))
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "the original")
        return root

    return make


@pytest.fixture
def tpu_migrate(capsys):
    """tpu_migrate(repo, "apply", ".", "--branch", "x") runs the CLI in ``repo`` -> Outcome."""

    def run(repo: Path, *argv: str) -> Outcome:
        os.chdir(repo)
        code = main([*argv[:1], "-j", "1", *argv[1:]] if argv[:1] == ("apply",) else list(argv))
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    return run


@pytest.fixture
def xla_available():
    if not os.environ.get("CI"):  # CI installs torch_xla: a skip there would hide a failure
        pytest.importorskip("torch_xla")
