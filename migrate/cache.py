"""On-disk cache of per-file results, so an unchanged repository re-checks in a fraction of the time.

An entry is keyed by a hash of: the file's bytes and path, the selection (its full ``repr``, so any
field a ``Selection`` grows is covered), whether the run is on stock libcst
(``TPU_MIGRATE_PLAIN_LIBCST``), and a fingerprint of the tool's own code (version plus the
source of ``migrate`` and ``codemods``, the rules' cases aside: editing a rule invalidates
everything it might have said). It stores what the engine hands it: everything a ``FileResult`` says besides the source (the new
text or "unchanged", rule counts, findings, rewrite regions, verify adjustments, unused
suppressions, the error), as JSON — never pickle, since a cache directory could come from a
repository nobody here trusts. Files the text pre-filter skips (no torch word, no suppression) are
not cached: that check is cheaper than a cache lookup. A torch file no rule may act on is: telling
that parses it with Python's parser.

Location: ``.tpu-migrate-cache/`` in the current directory (with a ``.gitignore`` of ``*`` inside,
like ruff and pytest), or ``$TPU_MIGRATE_CACHE_DIR``. Entries are JSON files written atomically
(temporary file + rename), so parallel workers and killed runs never leave a half entry; an entry
that cannot be read or decoded is treated as a miss. Size: bounded to ``MAX_ENTRIES`` entries; after
a run the least recently used ones beyond that are removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path

from . import __version__
from .fastcst import plain_libcst

CACHE_DIR_NAME = ".tpu-migrate-cache"
FORMAT = 2
MAX_ENTRIES = 50_000


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Tool version plus a hash of the code that decides results: this package and the rules,
    without the rules' cases (``codemods/cases/``, three quarters of the files and read by the
    tests only)."""
    digest = hashlib.sha256(__version__.encode())
    here = Path(__file__).resolve().parent
    rules = here.parent / "codemods"
    for package in (here, rules):
        for source in _python_files(package, skipped=rules / "cases"):
            digest.update(source.relative_to(package.parent).as_posix().encode())
            digest.update(source.read_bytes())
    return digest.hexdigest()


def _python_files(directory: Path, skipped: Path) -> list[Path]:
    """The .py files under ``directory``, sorted, none under ``skipped``."""
    found = []
    for parent, subdirectories, names in os.walk(directory):
        subdirectories[:] = [name for name in subdirectories if Path(parent, name) != skipped]
        found.extend(Path(parent, name) for name in names if name.endswith(".py"))
    return sorted(found)


def default_location() -> Path:
    return Path(os.environ.get("TPU_MIGRATE_CACHE_DIR") or CACHE_DIR_NAME)


class ResultCache:
    """Picklable (sent to worker processes): holds only the directory and the selection's key."""

    def __init__(self, directory: Path, selection: object) -> None:
        self.directory = Path(directory).absolute()
        self._selection_key = hashlib.sha256(
            # (a run on stock libcst must not be answered with the fast layer's results)
            f"{FORMAT}\0{code_fingerprint()}\0{selection!r}\0{plain_libcst()}".encode()
        ).hexdigest()

    def key(self, path: Path, raw: bytes) -> str:
        digest = hashlib.sha256(self._selection_key.encode())
        digest.update(str(Path(path).absolute()).encode("utf-8", "surrogateescape") + b"\0")
        digest.update(raw)
        return digest.hexdigest()

    def _entry(self, key: str) -> Path:
        return self.directory / key[:2] / key[2:]

    def load(self, key: str) -> dict | None:
        """The stored payload, or None on a miss or an unreadable/undecodable entry."""
        entry = self._entry(key)
        try:
            data = json.loads(entry.read_bytes())
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                return None
            os.utime(entry)  # least recently used goes first when the cache is pruned
        except (OSError, ValueError, TypeError, KeyError):
            return None
        return data

    def store(self, key: str, payload: dict) -> None:
        """Best effort: a cache that cannot be written only costs speed."""
        data = {"format": FORMAT, **payload}
        entry = self._entry(key)
        try:
            self._ensure_directory()
            entry.parent.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp.")
            try:
                with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
                    json.dump(data, handle)
                os.replace(tmp, entry)
            except BaseException:
                _remove(Path(tmp))
                raise
        except OSError:
            pass

    def _ensure_directory(self) -> None:
        if not self.directory.is_dir():
            self.directory.mkdir(parents=True, exist_ok=True)
            (self.directory / ".gitignore").write_text("# created by tpu-migrate\n*\n")

    def prune(self, max_entries: int = MAX_ENTRIES) -> int:
        """Remove the least recently used entries beyond ``max_entries``; returns how many."""
        try:
            entries = [
                (entry.stat().st_mtime, entry)
                for bucket in self.directory.iterdir()
                if bucket.is_dir()
                for entry in bucket.iterdir()
            ]
        except OSError:
            return 0
        if len(entries) <= max_entries:
            return 0
        entries.sort()
        excess = entries[: len(entries) - max_entries]
        for _, entry in excess:
            _remove(entry)
        return len(excess)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
