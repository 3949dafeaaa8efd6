"""Command line: diff, apply, check, rules, explain, verify.

Exit codes: 0 nothing to do / all went well, 1 changes (diff, check), findings or unused
suppressions (check) were found,
2 some file could not be processed (the others still were), 3 usage error.

Each command imports what it needs when it runs (a pre-commit hook may start it on every commit):
building the parser and ``--help`` import neither libcst nor the rules, ``rules`` prints the
table in ``migrate/rule_table.py``, ``explain`` imports the rules but not the engine; ``diff``,
``apply`` and ``check`` live in ``migrate/commands.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from . import __version__
from .pr import options as pr_options
from .verify import command as verify_command

EXIT_OK, EXIT_CHANGES, EXIT_FAILED, EXIT_USAGE = 0, 1, 2, 3


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return args.handler(args)
    except UsageError as exc:
        print(f"tpu-migrate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def exit(self, status: int = 0, message: str | None = None):  # usage errors exit 3, not 2
        if message:
            sys.stderr.write(message)
        sys.exit(EXIT_USAGE if status else status)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tpu-migrate", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"tpu-migrate {__version__}")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)

    def files_command(name: str, help_text: str, handler) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument(
            "paths", nargs="*", metavar="PATH", help="files or directories (default: .)"
        )
        sub.add_argument(
            "--select",
            type=_codes,
            default=None,
            metavar="CODE[,CODE]",
            help="only these rules (prefixes such as TPU1 allowed); replaces the config's select",
        )
        sub.add_argument(
            "--extend-select",
            type=_codes,
            default=[],
            metavar="CODE[,CODE]",
            help="add these rules to the selection (from the config or --select)",
        )
        sub.add_argument(
            "--ignore",
            type=_codes,
            default=None,
            metavar="CODE[,CODE]",
            help="skip these rules or findings (prefixes allowed); replaces the config's ignore",
        )
        sub.add_argument(
            "--exclude",
            action="append",
            default=None,
            metavar="GLOB",
            help="skip paths matching GLOB (repeatable); replaces the config's exclude",
        )
        sub.add_argument(
            "--jobs",
            "-j",
            type=int,
            default=None,
            metavar="N",
            help="worker processes (default: the config's jobs, else all cores)",
        )
        config = sub.add_mutually_exclusive_group()
        config.add_argument(
            "--config",
            metavar="FILE",
            help="read [tool.tpu-migrate] from FILE instead of the nearest pyproject.toml",
        )
        config.add_argument("--no-config", action="store_true", help="ignore every pyproject.toml")
        sub.add_argument(
            "--no-cache",
            action="store_true",
            help="neither read nor write the result cache (.tpu-migrate-cache/)",
        )
        sub.set_defaults(handler=handler)
        return sub

    files_command(
        "diff", "Show what `apply` would change, as a unified diff; change nothing.", _cmd_diff
    )
    apply = files_command("apply", "Rewrite the files in place.", _cmd_apply)
    pr_options.add_arguments(apply)
    check = files_command(
        "check", "List the rewrites that apply and the findings that need a human.", _cmd_check
    )
    check.add_argument("--format", choices=("text", "json", "sarif", "markdown"), default="text")

    rules = commands.add_parser("rules", help="List every rule.", description="List every rule.")
    rules.set_defaults(handler=_cmd_rules)
    explain = commands.add_parser("explain", help="Show a rule's documentation.")
    explain.add_argument("code", metavar="CODE")
    explain.set_defaults(handler=_cmd_explain)
    verify_command.add_parser(commands)
    return parser


def _codes(text: str) -> list[str]:
    return [code.strip().upper() for code in text.split(",") if code.strip()]


def _cmd_diff(args) -> int:
    from .commands import diff_command

    return diff_command(args)


def _cmd_apply(args) -> int:
    from .commands import apply_command

    return apply_command(args)


def _cmd_check(args) -> int:
    from .commands import check_command

    return check_command(args)


def _cmd_rules(args) -> int:
    from .rule_table import ALIASES, ROWS as rows  # the rules' own words, without importing them

    width = max(len(row[1]) for row in rows)
    for code, name, safety, summary in rows:
        print(f"{code}  {name:<{width}}  {safety:<8}  {summary}")
    if ALIASES:
        print()
        print("Split rules (the old code still selects, ignores, suppresses and configures all):")
        for old, parts in ALIASES.items():
            print(f"{old}  = {', '.join((old, *parts))}")
    return EXIT_OK


def _cmd_explain(args) -> int:
    import codemods

    try:
        rule = codemods.rule_by_code(args.code)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    code = args.code.upper()
    if code in rule.FINDINGS:
        print(f"{code} (a finding of {rule.CODE} {rule.NAME}; needs a human)")
        print(rule.finding_doc(code).full_text())
        print()
        print(f"The rule that reports it, {rule.CODE}:")
        print()
    print(f"{rule.CODE} {rule.NAME} ({rule.SAFETY.value})")
    print(rule.SUMMARY)
    _print_split(codemods, rule)
    if rule.FINDINGS:
        print()
        for code, summary in rule.FINDINGS.items():
            print(f"{code}: {summary}")
    print()
    print(rule.documentation())
    if rule.OPTIONS:
        print()
        print(f"Options ([tool.tpu-migrate.options.{rule.CODE}] in pyproject.toml, defaults):")
        for name, default in rule.OPTIONS.items():
            print(f"    {name} = {json.dumps(default)}")
    return EXIT_OK


def _print_split(codemods, rule) -> None:
    """For a rule that was split, or split off from another: what its old code stands for."""
    old = codemods.split_from(rule.CODE) or rule.CODE
    parts = codemods.parts_of(old)
    if len(parts) == 1:
        return
    print()
    if old == rule.CODE:
        print(f"{old} was split into {len(parts)} rules; it still names all of them in --select,")
        print("--ignore, suppression comments and [tool.tpu-migrate] (select, ignore, options):")
    else:
        print(f"Split off from {old}, which still names this rule too in --select, --ignore,")
        print("suppression comments and [tool.tpu-migrate] (select, ignore, options). The parts:")
    for part in parts:
        part_rule = codemods.rule_by_code(part)
        main = " (the main part, documented here)" if part == rule.CODE == old else ""
        print(f"    {part} {part_rule.NAME}: {part_rule.SUMMARY}{main}")
