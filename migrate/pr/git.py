"""The git plumbing `apply --branch` needs, through the ``git`` command (no library)."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence


class GitError(Exception):
    """A git command failed; the message says which one and what git answered."""


class NotARepository(GitError):
    pass


@dataclass(frozen=True)
class StatusEntry:
    path: str  # relative to the top of the work tree, posix
    code: str  # the two-letter XY status of `git status --porcelain`, "??" for untracked

    def describe(self) -> str:
        if self.code == "??":
            return f"{self.path} (untracked)"
        staged, unstaged = self.code[0], self.code[1]
        parts = []
        if staged not in " ?":
            parts.append("staged")
        if unstaged not in " ?":
            parts.append("modified" if unstaged == "M" else f"status {unstaged}")
        return f"{self.path} ({', '.join(parts) or self.code.strip()})"


class Repo:
    """One git work tree; every command runs at its top directory."""

    def __init__(self, top: Path) -> None:
        self.top = top

    @classmethod
    def containing(cls, path: Path) -> "Repo":
        directory = path if path.is_dir() else path.parent
        try:
            proc = subprocess.run(
                ["git", "rev-parse", "--show-toplevel"],
                cwd=directory,
                capture_output=True,
                text=True,
            )
        except FileNotFoundError:
            raise NotARepository("git is not installed (it is needed for --branch)") from None
        if proc.returncode != 0:
            raise NotARepository(
                f"{path} is not inside a git work tree (--branch commits to git; "
                "run `git init` and commit your code first, or drop --branch)"
            )
        return cls(Path(proc.stdout.strip()).resolve())

    def run(
        self, *args: str, input: bytes | None = None, check: bool = True
    ) -> subprocess.CompletedProcess:
        proc = subprocess.run(["git", *args], cwd=self.top, input=input, capture_output=True)
        if check and proc.returncode != 0:
            message = proc.stderr.decode("utf-8", "replace").strip() or f"exit {proc.returncode}"
            raise GitError(f"`git {' '.join(args)}` failed: {message}")
        return proc

    def output(self, *args: str) -> str:
        return self.run(*args).stdout.decode("utf-8", "surrogateescape").strip()

    def relative(self, path: Path) -> str | None:
        """``path`` relative to the top of the work tree (posix), None when it is outside."""
        try:
            return path.resolve().relative_to(self.top).as_posix()
        except ValueError:
            return None

    # --- state -------------------------------------------------------------------------------

    def head_commit(self) -> str | None:
        proc = self.run("rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
        return _first_line(proc)

    def current_branch(self) -> str | None:
        """The checked-out branch; None on a detached HEAD."""
        return _first_line(self.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False))

    def branch_exists(self, name: str) -> bool:
        return (
            self.run(
                "show-ref", "--verify", "--quiet", f"refs/heads/{name}", check=False
            ).returncode
            == 0
        )

    def valid_branch_name(self, name: str) -> bool:
        return self.run("check-ref-format", "--branch", name, check=False).returncode == 0

    def status(self) -> list[StatusEntry]:
        """Everything `git status` would call a change: staged, unstaged, untracked, conflicts."""
        raw = self.run("status", "--porcelain", "-z", "--untracked-files=all").stdout
        fields = raw.decode("utf-8", "surrogateescape").split("\0")
        entries = []
        index = 0
        while index < len(fields):
            field = fields[index]
            index += 1
            if len(field) < 4:
                continue
            code, path = field[:2], field[3:]
            entries.append(StatusEntry(path, code))
            if "R" in code or "C" in code:  # a rename/copy is followed by its source path
                if index < len(fields) and fields[index]:
                    entries.append(StatusEntry(fields[index], code))
                index += 1
        return entries

    def tracked(self, paths: Sequence[str]) -> set[str]:
        if not paths:
            return set()
        raw = self.run("ls-files", "-z", "--cached", "--", *[f":(literal){p}" for p in paths])
        return {p for p in raw.stdout.decode("utf-8", "surrogateescape").split("\0") if p}

    def known_files(self) -> list[str]:
        """Tracked plus untracked-but-not-ignored files (what a fresh clone plus your work holds)."""
        raw = self.run("ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout
        return sorted({p for p in raw.decode("utf-8", "surrogateescape").split("\0") if p})

    def identity_problem(self) -> str | None:
        """Why git could not commit under the user's own name, or None when it can."""
        for kind in ("AUTHOR", "COMMITTER"):
            proc = self.run(
                "-c", "user.useConfigOnly=true", "var", f"GIT_{kind}_IDENT", check=False
            )
            if proc.returncode != 0:
                return (
                    "git does not know who you are, so it cannot commit: run "
                    '`git config --global user.name "Your Name"` and '
                    '`git config --global user.email "you@example.com"` '
                    f"(or set GIT_{kind}_NAME / GIT_{kind}_EMAIL)"
                )
        return None

    def git_dir(self) -> Path:
        return Path(self.top, self.output("rev-parse", "--git-dir")).resolve()

    def remote_for(self, branch: str | None) -> str | None:
        """The remote a pull request goes to: the branch's upstream remote, else ``origin``."""
        remotes = self.output("remote").split()
        if branch:
            configured = self.run("config", "--get", f"branch.{branch}.remote", check=False)
            name = configured.stdout.decode().strip()
            if name in remotes:
                return name
        return "origin" if "origin" in remotes else (remotes[0] if len(remotes) == 1 else None)

    # --- changes -------------------------------------------------------------------------------

    def create_branch(self, name: str) -> None:
        """Create ``name`` at HEAD and check it out (uncommitted changes come along untouched)."""
        self.run("checkout", "--quiet", "-b", name)

    def commit_paths(self, message: str, paths: Sequence[str]) -> str:
        """Commit exactly ``paths`` (whatever else is staged stays staged); returns the new sha."""
        literal = [f":(literal){p}" for p in paths]
        self.run("add", "--", *literal)
        # --no-verify: a hook that reformats or refuses would break the one-rule-per-commit series.
        self.run(
            "commit",
            "--quiet",
            "--no-verify",
            "--file=-",
            "--only",
            "--",
            *literal,
            input=message.encode("utf-8"),
        )
        return self.output("rev-parse", "HEAD")

    def revert_conflicts(self, commit: str, onto: str = "HEAD") -> list[str]:
        """Files in which `git revert commit` on ``onto`` would conflict (nothing is changed).

        The same three-way merge git revert makes, file by file: base = the commit, ours = onto,
        theirs = the commit's parent.
        """
        listing = self.run("diff-tree", "--no-commit-id", "--name-only", "-r", "-z", commit)
        paths = [p for p in listing.stdout.decode("utf-8", "surrogateescape").split("\0") if p]
        conflicts = []
        with tempfile.TemporaryDirectory(prefix="tpu-migrate-revert-") as temp:
            for path in paths:
                sides = []
                for name, revision in (("ours", onto), ("base", commit), ("theirs", f"{commit}^")):
                    blob = self.run("show", f"{revision}:{path}", check=False)
                    if blob.returncode != 0:  # added or deleted: not a rule's kind of change
                        break
                    side = Path(temp, name)
                    side.write_bytes(blob.stdout)
                    sides.append(str(side))
                else:
                    merged = self.run("merge-file", "-p", "-q", *sides, check=False)
                    if merged.returncode == 0:
                        continue
                conflicts.append(path)
        return conflicts


def _first_line(proc: subprocess.CompletedProcess) -> str | None:
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", "surrogateescape").strip() or None
