"""The options of `tpu-migrate apply` that ask for a branch, apart from the code that makes one:
the CLI builds its parser from them without importing git, jinja2 or the verification."""

from __future__ import annotations

import argparse
from pathlib import Path

PR_ONLY_OPTIONS = ("allow_dirty", "pr_template", "pr_body", "verify", "open_pr")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("pull request (see README, 'Pull requests')")
    group.add_argument(
        "--branch",
        metavar="NAME",
        help="create branch NAME from HEAD and commit the migration there, one commit per rule",
    )
    group.add_argument(
        "--allow-dirty",
        action="store_true",
        help="run although the work tree has uncommitted changes (those files are left out)",
    )
    group.add_argument(
        "--pr-template", type=Path, metavar="FILE", help="jinja2 template of the PR description"
    )
    group.add_argument(
        "--pr-body",
        type=Path,
        metavar="FILE",
        help="write the PR description to FILE (default: .git/tpu-migrate/NAME.md)",
    )
    group.add_argument(
        "--verify",
        metavar='"SCRIPT [-- ARGS]"',
        help="verify the branch against the original on the CPU (tpu-migrate verify) and report it",
    )
    group.add_argument(
        "--open-pr", action="store_true", help="push the branch and open the PR with `gh`"
    )


def wanted(args: argparse.Namespace) -> bool:
    """Does this `apply` call ask for a branch (or for a branch-only option)?"""
    return bool(args.branch) or any(getattr(args, name) for name in PR_ONLY_OPTIONS)
