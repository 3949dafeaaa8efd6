"""Which files to look at: what git knows in a work tree, a careful walk elsewhere."""

from __future__ import annotations

import fnmatch
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

# Directories a walk never enters: virtualenvs, VCS data, caches, build output.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "build",
        "dist",
        "site-packages",
        "node_modules",
        ".eggs",
        ".ipynb_checkpoints",  # Jupyter's autosaved copies of the notebooks beside it
    }
)
PYTHON_SUFFIXES = (".py", ".ipynb")


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    problems: list[tuple[Path, str]] = field(default_factory=list)  # (path, message)


def discover(paths: Sequence[str | Path], exclude: Sequence[str] = ()) -> Discovery:
    """Python files and Jupyter notebooks under ``paths`` (files or directories), de-duplicated, in a stable order.

    A file named explicitly is taken even if git ignores it; directories are expanded with
    ``git ls-files`` (tracked + untracked-not-ignored) inside a work tree, by walking otherwise.
    Symbolic links inside directories are never followed (no escapes from the tree, no loops).
    """
    result = Discovery()
    seen: set[Path] = set()
    for given in paths or ["."]:
        given = Path(given)
        if not given.exists() and not given.is_symlink():
            result.problems.append((given, "no such file or directory"))
            continue
        if given.is_dir():
            candidates = _git_files(given)
            if candidates is None:
                candidates = _walk(given, result)
        else:
            # A link named explicitly is migrated at its target, so the link itself survives.
            candidates = [given.resolve() if given.is_symlink() else given]
        for path in candidates:
            if _excluded(path, given, exclude):
                continue
            key = path.resolve() if path.exists() else path.absolute()
            if key in seen:
                continue
            seen.add(key)
            result.files.append(path)
    return result


def _excluded(path: Path, root: Path, patterns: Sequence[str]) -> bool:
    if not patterns:
        return False
    try:
        relative = path.relative_to(root).as_posix()
    except ValueError:
        relative = path.as_posix()
    parts = Path(relative).parts
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(path.as_posix(), pattern):
            return True
        if any(fnmatch.fnmatch(part, pattern) for part in parts):
            return True
    return False


def _git_files(directory: Path) -> list[Path] | None:
    """Files git knows under ``directory``; None when it is not inside a work tree."""
    try:
        proc = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."],
            cwd=directory,
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    files = []
    for name in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not name.endswith(PYTHON_SUFFIXES):
            continue
        path = directory / name
        if any(part in SKIPPED_DIRS for part in Path(name).parts[:-1]):
            continue
        if path.is_symlink():
            continue  # the real file is processed under its own name (and a write would break the link)
        if path.is_file():  # deleted-but-tracked files and submodule dirs are not ours
            files.append(path)
    return sorted(files)


def _walk(directory: Path, result: Discovery) -> list[Path]:
    files: list[Path] = []

    def on_error(exc: OSError) -> None:
        result.problems.append((Path(exc.filename or directory), f"cannot list: {exc.strerror}"))

    for current, dirnames, filenames in os.walk(directory, onerror=on_error, followlinks=False):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIPPED_DIRS and not _is_virtualenv(Path(current, d))
        )
        for name in sorted(filenames):
            if not name.endswith(PYTHON_SUFFIXES):
                continue
            path = Path(current, name)
            if path.is_symlink():
                continue  # never followed: out of the tree, into a loop, or a second name for a file
            files.append(path)
    return files


def _is_virtualenv(directory: Path) -> bool:
    return (directory / "pyvenv.cfg").is_file()


def display_path(path: Path, base: Path | None = None) -> str:
    """The path as the user should read it: relative to the current directory when possible."""
    base = base or Path.cwd()
    try:
        return path.absolute().relative_to(base.absolute()).as_posix()
    except ValueError:
        return path.as_posix()
