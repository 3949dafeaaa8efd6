"""Keep a verified run's writes in its shadow tree, and its imports on the shadow's code.

The run starts in a shadow of the user's tree (see migrate/verify/shadow.py): real folders for
code, symbolic links to the user's entries for everything else. Reading through a link reads the
user's file. Before anything is written, the path's place in the shadow is made real:

- a linked folder on the way becomes a real folder whose entries are links (one level at a time);
- a linked file that is opened to change it becomes a copy; one that is replaced is unlinked.

Absolute paths into the user's project folders are taken to their place in the shadow, for reads
and writes alike, so a file the run wrote is the one it reads back. Other absolute paths (``/tmp``,
caches in the home folder) are the script's own business and are left alone.

On the migrated side, a module found in the user's project is imported from its migrated copy in
the shadow. Modules the run imported from the user's files outside any shadowed folder are listed
(``local_modules``), so the verifier can migrate them too.
"""

from __future__ import annotations

import builtins
import functools
import importlib.machinery
import importlib.util
import io
import os
import shutil
import stat
import sys
import sysconfig
import time

_NOT_LINKED = frozenset({"__pycache__"})
_BOOTSTRAP = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))

SANDBOX: Sandbox | None = None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root + os.sep)


class Sandbox:
    def __init__(self, base: str, protected: tuple[str, ...], remap_imports: bool) -> None:
        self.base = os.path.realpath(base)
        # verify's own folder (the shadows, the traces): never taken into the shadow, even when a
        # protected folder holds it (a project root of /tmp/x with verify's folder in /tmp)
        self.own = os.path.dirname(self.base)
        self.protected = tuple(sorted({os.path.abspath(p) for p in protected}))
        self.remap_imports = remap_imports
        self.started = time.time()
        self._os = {
            name: getattr(os, name) for name in ("lstat", "listdir", "symlink", "unlink", "mkdir")
        }

    # -- paths ---------------------------------------------------------------------------------

    def mapped(self, path):
        """``path`` with an absolute place in the user's project taken into the shadow."""
        if isinstance(path, int):
            return path
        try:
            text = os.fspath(path)
        except TypeError:
            return path
        if isinstance(text, bytes):
            return path
        absolute = os.path.abspath(text)
        if _inside(absolute, self.own):
            return path
        for root in self.protected:
            if _inside(absolute, root):
                return self.base + absolute
        return path

    def for_write(self, path, final: str = "keep"):
        """``path`` made safe to write: ``final`` says what happens to a link at its last step.

        "keep" copies a linked file (its content is read or extended), "replace" unlinks it (it is
        truncated or replaced), "leave" keeps the link (the operation acts on the link itself).
        """
        mapped = self.mapped(path)
        if isinstance(mapped, int):
            return mapped
        try:
            absolute = os.path.abspath(os.fspath(mapped))
        except TypeError:
            return mapped
        if isinstance(absolute, str) and _inside(absolute, self.base) and absolute != self.base:
            self._materialize(absolute, final)
        return mapped

    def _materialize(self, absolute: str, final: str) -> None:
        parts = absolute[len(self.base) + 1 :].split(os.sep)
        current = self.base
        for index, part in enumerate(parts):
            current = os.path.join(current, part)
            last = index == len(parts) - 1
            try:
                info = self._os["lstat"](current)
            except OSError:
                return  # the rest of the path does not exist yet: it will be created in the shadow
            if not _is_link(info):
                continue
            target = os.path.realpath(current)
            if _inside(target, self.base):
                continue
            if os.path.isdir(target):
                if not last or final != "leave":
                    self._unshare(current, target)
            elif last and final == "keep":
                self._copy_up(current, target)
            elif last and final == "replace":
                self._os["unlink"](current)

    def _unshare(self, place: str, target: str) -> None:
        self._os["unlink"](place)
        try:
            self._os["mkdir"](place)
        except FileExistsError:
            return  # another process of the run did it first
        for name in sorted(self._os["listdir"](target)):
            if name not in _NOT_LINKED:
                self._os["symlink"](os.path.join(target, name), os.path.join(place, name))

    def _copy_up(self, place: str, target: str) -> None:
        temporary = place + ".tpu-migrate-copy"
        shutil.copy2(target, temporary)
        os.replace(temporary, place)

    # -- imports -------------------------------------------------------------------------------

    def local_modules(self) -> list[dict]:
        """Modules imported from the user's Python files (linked or named directly), not from
        Python's own folders: the verifier checks that each of them was migrated."""
        installed = {
            os.path.realpath(p)
            for p in (
                sys.prefix,
                sys.base_prefix,
                sys.exec_prefix,
                *(sysconfig.get_paths().get(k, "") for k in ("stdlib", "purelib", "platlib")),
            )
            if p
        }
        modules = []
        for name, module in list(sys.modules.items()):
            origin = getattr(module, "__file__", None)
            if not origin or not origin.endswith(".py"):
                continue
            real = os.path.realpath(origin)
            if _inside(real, self.base) or _inside(real, _BOOTSTRAP):
                continue  # a migrated file, or this instrumentation
            if any(_inside(real, root) for root in installed) or "site-packages" in real:
                continue
            try:
                if os.stat(real).st_mtime >= self.started:
                    continue  # code the run generated itself (torch writes some to a temp folder)
            except OSError:
                continue
            modules.append({"name": name, "file": os.path.abspath(origin), "real": real})
        return sorted(modules, key=lambda m: m["name"])


def _is_link(info) -> bool:
    return stat.S_ISLNK(info.st_mode)


class _ShadowImports:
    """Finds a module of the user's project at its place in the shadow (the migrated copy)."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def find_spec(self, fullname, path=None, target=None):
        search = None
        if path is not None:
            remapped = [self.sandbox.mapped(entry) for entry in path]
            if remapped == list(path):
                return None
            search = remapped
        spec = importlib.machinery.PathFinder.find_spec(fullname, search or path, target)
        if spec is None or not spec.origin or not spec.has_location:
            return spec
        if _inside(os.path.realpath(spec.origin), _BOOTSTRAP):
            return spec  # this instrumentation, even when it lies inside the user's project
        mapped = self.sandbox.mapped(spec.origin)
        if mapped == spec.origin or not os.path.exists(mapped):
            return spec
        locations = None
        if spec.submodule_search_locations is not None:
            locations = [self.sandbox.mapped(p) for p in spec.submodule_search_locations]
        return importlib.util.spec_from_file_location(
            fullname, mapped, submodule_search_locations=locations
        )


# -- the patches -------------------------------------------------------------------------------


def install(base: str, protected, remap_imports: bool) -> None:
    global SANDBOX
    if SANDBOX is not None or not base:
        return
    SANDBOX = sandbox = Sandbox(base, tuple(protected), remap_imports)
    original_open = builtins.open

    @functools.wraps(original_open)
    def open(file, mode="r", *args, **kwargs):
        if isinstance(mode, str) and any(c in mode for c in "wax+"):
            file = sandbox.for_write(file, "replace" if "w" in mode else "keep")
        else:
            file = sandbox.mapped(file)
        return original_open(file, mode, *args, **kwargs)

    builtins.open = io.open = open

    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def os_open(original):
        @functools.wraps(original)
        def patched(path, flags, *args, **kwargs):
            if kwargs.get("dir_fd") is None:
                if flags & writes:
                    path = sandbox.for_write(path, "replace" if flags & os.O_TRUNC else "keep")
                else:
                    path = sandbox.mapped(path)
            return original(path, flags, *args, **kwargs)

        return patched

    os.open = os_open(os.open)
    for name in ("stat", "lstat", "listdir", "scandir", "access", "chdir", "readlink"):
        _patch_os(name, sandbox.mapped)
    for name, final in (
        ("mkdir", "leave"),
        ("remove", "leave"),
        ("unlink", "leave"),
        ("rmdir", "keep"),
        ("chmod", "keep"),
        ("utime", "keep"),
        ("truncate", "keep"),
    ):
        _patch_os(name, functools.partial(sandbox.for_write, final=final))
    for name in ("rename", "replace", "symlink", "link"):
        _patch_os_pair(name, sandbox)
    original_rmtree = shutil.rmtree

    @functools.wraps(original_rmtree)
    def rmtree(path, *args, **kwargs):
        return original_rmtree(sandbox.for_write(path, "keep"), *args, **kwargs)

    shutil.rmtree = rmtree
    if remap_imports:
        finders = sys.meta_path
        position = next(
            (i for i, f in enumerate(finders) if f is importlib.machinery.PathFinder), len(finders)
        )
        finders.insert(position, _ShadowImports(sandbox))


def _patch_os(name: str, mapping) -> None:
    original = getattr(os, name, None)
    if original is None:
        return

    @functools.wraps(original)
    def patched(path=".", *args, **kwargs):
        if kwargs.get("dir_fd") is None:
            path = mapping(path)
        return original(path, *args, **kwargs)

    setattr(os, name, patched)


def _patch_os_pair(name: str, sandbox: Sandbox) -> None:
    original = getattr(os, name, None)
    if original is None:
        return

    @functools.wraps(original)
    def patched(source, destination, *args, **kwargs):
        if kwargs.get("src_dir_fd") is None and kwargs.get("dir_fd") is None:
            if name in ("rename", "replace"):
                source = sandbox.for_write(source, "leave")
            else:
                source = sandbox.mapped(source)
            destination = sandbox.for_write(destination, "leave")
        return original(source, destination, *args, **kwargs)

    setattr(os, name, patched)


def guard_torch_save(torch) -> None:
    """torch.save opens a path in C++: its place in the shadow is made real first."""
    if SANDBOX is None:
        return
    original = torch.save

    @functools.wraps(original)
    def save(obj, f, *args, **kwargs):
        if isinstance(f, (str, os.PathLike)):
            f = SANDBOX.for_write(f, "replace")
        return original(obj, f, *args, **kwargs)

    torch.save = save
