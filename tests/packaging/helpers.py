"""Shared by the packaging tests: a copy of the work tree to build from, and pip's offline words."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# pip's words when no index answers (a build's own setuptools, a dependency): skip, not fail
NO_INDEX = (
    "Could not find a version that satisfies the requirement",
    "No matching distribution found",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "Max retries exceeded",
)


def env(**extra: str) -> dict[str, str]:
    """The environment less git's own variables (the suite may run inside a git hook) and
    PYTHONPATH (nothing may import this checkout by accident)."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "PYTHONPATH"}
    return {**kept, **extra}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        env=env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def copy_of_the_work_tree(dest: Path) -> Path:
    """The files git would see here (tracked, and untracked but not ignored), as they are now, in
    ``dest``: builds leave the checkout alone, and uncommitted work is what gets tested."""
    try:
        listed = git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the packaging tests build from the files git lists")
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # (a tracked file deleted in the work tree is not)
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def skip_without_index(what: str, said: str) -> None:
    """Skip when ``said`` (a failed pip's output) shows that no package index answered."""
    lines = [line.strip() for line in said.splitlines()]
    why = list(dict.fromkeys(line for line in lines if any(w in line for w in NO_INDEX)))
    if why:
        pytest.skip(f"{what}: pip reached no package index: " + " / ".join(why[:3]))
