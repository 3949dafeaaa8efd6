"""Opening the pull request with the GitHub CLI (`gh`), or saying exactly how to."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PullRequest:
    title: str
    body_file: Path
    head: str  # the migration branch
    base: str | None  # the branch it was made from (None on a detached HEAD: gh's default)
    remote: str | None  # where the branch is pushed first

    def push_command(self) -> list[str]:
        return ["git", "push", "--set-upstream", self.remote or "origin", self.head]

    def create_command(self) -> list[str]:
        command = ["gh", "pr", "create", "--title", self.title, "--body-file", str(self.body_file)]
        command += ["--head", self.head]
        if self.base:
            command += ["--base", self.base]
        return command

    def shell_commands(self) -> str:
        return f"{shlex.join(self.push_command())} && {shlex.join(self.create_command())}"


def gh_problem(cwd: Path) -> str | None:
    """Why `gh` cannot open the pull request (not installed, not logged in), or None."""
    if shutil.which("gh") is None:
        return "the GitHub CLI `gh` is not installed (https://cli.github.com)"
    try:
        proc = subprocess.run(["gh", "auth", "status"], cwd=cwd, capture_output=True, text=True)
    except OSError as exc:
        return f"cannot run gh: {exc.strerror or exc}"
    if proc.returncode != 0:
        return "gh is not logged in to GitHub (run `gh auth login`)"
    return None


def open_pull_request(request: PullRequest, cwd: Path) -> tuple[bool, str]:
    """Push the branch and create the pull request; (ok, what git/gh said)."""
    output = []
    for command in (request.push_command(), request.create_command()):
        try:
            proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
        except OSError as exc:
            return False, f"cannot run {command[0]}: {exc.strerror or exc}"
        output.append((proc.stdout + proc.stderr).strip())
        if proc.returncode != 0:
            return False, f"`{shlex.join(command)}` failed:\n" + output[-1]
    return True, "\n".join(line for line in output if line)
