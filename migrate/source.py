"""Reading and writing Python files without losing anything: encoding, BOM, newlines, permissions."""

from __future__ import annotations

import codecs
import errno
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .notebook import Notebook

NOTEBOOK_SUFFIX = ".ipynb"


class SourceError(Exception):
    """A file that cannot be read or decoded; ``line`` is where the problem is (1 if unknown)."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class SourceFile:
    path: Path
    raw: bytes
    text: str  # decoded, without BOM; newlines exactly as in the file
    encoding: str
    bom: bool
    # A Jupyter notebook: ``text`` is the program its code cells make (migrate/notebook.py).
    notebook: "Notebook | None" = None

    @classmethod
    def read(cls, path: Path) -> "SourceFile":
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise SourceError(f"cannot read: {exc.strerror or exc}") from exc
        if path.suffix == NOTEBOOK_SUFFIX:
            return cls.from_notebook(path, raw)
        return cls.from_bytes(path, raw)

    @classmethod
    def from_notebook(cls, path: Path, raw: bytes) -> "SourceFile":
        from .notebook import Notebook

        notebook = Notebook.parse(raw)
        return cls(path, raw, notebook.program, "utf-8", False, notebook)

    @classmethod
    def from_bytes(cls, path: Path, raw: bytes) -> "SourceFile":
        if b"\x00" in raw:
            raise SourceError("binary file (contains NUL bytes), not Python source")
        bom = raw.startswith(codecs.BOM_UTF8)
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        except SyntaxError as exc:
            raise SourceError(f"bad encoding declaration: {exc}", getattr(exc, "lineno", 1) or 1)
        encoding = "utf-8" if encoding == "utf-8-sig" else encoding
        body = raw[len(codecs.BOM_UTF8) :] if bom else raw
        try:
            text = body.decode(encoding)
        except UnicodeDecodeError as exc:
            line = body[: exc.start].count(b"\n") + 1
            raise SourceError(
                f"cannot decode as {encoding}: {exc.reason} at byte {exc.start}", line
            )
        return cls(path=path, raw=raw, text=text, encoding=encoding, bom=bom)

    def encode(self, text: str) -> bytes:
        """The bytes to write for ``text``, in this file's encoding and with its BOM (for a
        notebook: its JSON with the code cells taken from ``text``)."""
        if self.notebook is not None:
            return self.notebook.render(text)
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that readers see either the old or the new file, never a mix.

    The temporary file lives in the same directory (same filesystem, so ``os.replace`` is atomic),
    is flushed and fsynced before the rename, and takes over the original's permission bits.
    """
    path = Path(path)
    mode = stat.S_IMODE(path.stat().st_mode)
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        # A rename would replace it anyway (even as root): respect the owner's protection.
        raise PermissionError(errno.EACCES, "the file is read-only", str(path))
    fd, tmp_name = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tpu-migrate.tmp", dir=path.parent
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
