"""Where verify's runs happen: shadow trees that look like the user's project, path for path.

Each run gets its own shadow, a folder that reproduces the absolute layout of the file system around
the project (``<shadow>/<absolute path>``):

- the project's folders that hold Python code are real folders; its Python files are links to the
  user's files (original side) or their migrated versions (migrated side);
- every other entry (data, configs, checkpoints, folders without code) is a symbolic link to the
  user's entry: reads go to the user's files where they are, and no data is copied;
- every ancestor of the project root is a real folder whose other entries are links, so ``../data``
  from the working directory finds what the user's own run finds.

A run starts in the shadow of the user's working directory. Its writes stay in the shadow: the
run's sandbox (``bootstrap/_tpu_migrate_verify/sandbox.py``) turns a linked folder into a real one
(its entries linked) before a write goes into it, and a linked file into a copy before it is
changed. The same ``unshare`` step builds the tree here.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..pr.git import NotARepository, Repo

# Never linked into a shadow: Python would write the run's bytecode into the user's folder.
NOT_LINKED = frozenset({"__pycache__"})


class Shadow:
    def __init__(self, base: Path) -> None:
        base.mkdir(parents=True, exist_ok=True)
        self.base = Path(os.path.realpath(base))
        # The temporary folder the shadows live in: never linked into a shadow (no loops).
        self._hidden = {str(self.base.parent)}
        self._unshared: set[Path] = set()

    def path(self, user_path: Path) -> Path:
        """Where ``user_path`` (absolute) appears in this shadow."""
        return self.base / Path(os.path.abspath(user_path)).relative_to("/")

    def unshare(self, user_dir: Path) -> Path:
        """Make ``user_dir``'s place in the shadow a real folder, its entries linked (idempotent)."""
        user_dir = Path(os.path.abspath(user_dir))
        place = self.path(user_dir)
        if user_dir in self._unshared:
            return place
        if user_dir.parent != user_dir:
            self.unshare(user_dir.parent)
        if place.is_symlink():
            place.unlink()
        place.mkdir(exist_ok=True)
        try:
            entries = sorted(os.listdir(user_dir))
        except OSError:
            entries = []
        for name in entries:
            entry = user_dir / name
            if name in NOT_LINKED or str(entry) in self._hidden or os.path.lexists(place / name):
                continue
            os.symlink(entry, place / name)
        self._unshared.add(user_dir)
        return place

    def add_files(self, files: dict[Path, bytes | None]) -> None:
        """Put files in their folders: bytes are written (a migrated version), None stays a link."""
        for user_path, content in sorted(files.items()):
            self.unshare(user_path.parent)
            if content is None:
                continue
            place = self.path(user_path)
            if place.is_symlink() or place.exists():
                place.unlink()
            place.write_bytes(content)


def git_root(directory: Path) -> Path | None:
    try:
        return Repo.containing(directory).top
    except NotARepository:
        return None


def project_root(script: Path, cwd: Path, pythonpath: list[Path]) -> tuple[Path, list[str]]:
    """The folder whose Python files make up the user's project, and notes on how it was chosen.

    The git work tree holding the script when there is one. Otherwise the smallest folder holding
    the script's folder, the working directory and the PYTHONPATH entries, where a place that would
    widen it to the file system root, the home folder or the temporary folder is left out (and
    named in a note).
    """
    repository = git_root(script.parent)
    if repository is not None:
        return repository, [f"project root: the git work tree {repository}"]
    root, notes = script.parent, []
    home = Path(os.path.expanduser("~")).resolve()
    temp = Path(tempfile.gettempdir()).resolve()
    too_wide = {Path("/"), home, *home.parents, temp, *temp.parents}
    for place in [cwd, *pythonpath]:
        if not place.is_dir():
            continue
        wider = Path(os.path.commonpath([root, place]))
        if wider in too_wide:
            notes.append(
                f"{place} is not taken into the project root (it would widen it to {wider}); "
                "pass --root to include it"
            )
            continue
        root = wider
    return root, [f"project root: {root} (no git work tree; --root sets another)", *notes]
