from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass

import pytest

from migrate.verify import command


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    result: dict | None  # the --json output


def _cli_main():
    """migrate.cli.main once it registers `verify`; until then a parser wired the same way."""
    from migrate import cli

    parser = cli._parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if "verify" in commands.choices:
        return cli.main

    def main(argv):
        parser = argparse.ArgumentParser(prog="tpu-migrate")
        add_parser_to = parser.add_subparsers(dest="command")
        command.add_parser(add_parser_to)
        args = parser.parse_args(argv)
        return args.handler(args)

    return main


@pytest.fixture
def verify_cli(capsys, tmp_path):
    """verify_cli("script.py", "--migrated", "x.py", "--", ...) -> Outcome (exit code, output, JSON)."""
    main = _cli_main()

    def run(*argv: str) -> Outcome:
        out_json = tmp_path / f"result-{len(list(tmp_path.glob('result-*.json')))}.json"
        args = list(argv)
        cut = args.index("--") if "--" in args else len(args)
        args[cut:cut] = ["--json", str(out_json)]
        code = main(["verify", *args])
        captured = capsys.readouterr()
        result = json.loads(out_json.read_text()) if out_json.exists() else None
        return Outcome(code, captured.out, captured.err, result)

    return run


@pytest.fixture
def xla_available():
    if not os.environ.get("CI"):  # CI installs torch_xla: a skip there would hide a failure
        pytest.importorskip("torch_xla")
