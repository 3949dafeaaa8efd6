"""``[tool.tpu-migrate]`` in the target project's pyproject.toml: found by walking up from the
paths given (like ruff and black), validated strictly, overridden by command-line flags.

    [tool.tpu-migrate]
    select = ["TPU1", "TPU2"]      # rule or finding codes, prefixes allowed
    ignore = ["TPU112"]
    exclude = ["legacy/*", "*_pb2.py"]
    jobs = 4
    target = "torch_xla"           # the only target for now

    [tool.tpu-migrate.options.TPU114]
    bucket_size = 64               # options a rule declares in its OPTIONS

The code of a rule that was split into several (``codemods/_aliases.py``) keeps naming all its
parts: in ``select``, ``ignore`` and as the key of an options table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import codemods

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

PYPROJECT = "pyproject.toml"
TARGETS = ("torch_xla",)  # what the rules migrate to; one day also e.g. JAX
KNOWN_KEYS = ("select", "ignore", "exclude", "jobs", "target", "options")


class ConfigError(Exception):
    """A configuration the tool cannot follow; the message names the file and the key."""


@dataclass(frozen=True)
class Config:
    path: Path | None = None  # None: no configuration file
    select: tuple[str, ...] | None = None  # None: not set (every rule)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    jobs: int | None = None
    target: str = "torch_xla"
    options: dict[str, dict[str, object]] = field(default_factory=dict)


def find_pyproject(paths: Sequence[str | Path]) -> Path | None:
    """The nearest pyproject.toml with a ``[tool.tpu-migrate]`` table, looking in the directory
    of the first path and its parents; the walk stops at a repository root (a ``.git``)."""
    start = Path(paths[0] if paths else ".").absolute()
    directory = start if start.is_dir() else start.parent
    for candidate in (directory, *directory.parents):
        pyproject = candidate / PYPROJECT
        if pyproject.is_file() and _has_our_table(pyproject):
            return pyproject
        if (candidate / ".git").exists():
            return None
    return None


def _has_our_table(pyproject: Path) -> bool:
    try:
        return "tpu-migrate" in _read_toml(pyproject).get("tool", {})
    except ConfigError:
        return True  # a broken file that may be ours: loading it reports the problem


def load_config(pyproject: Path) -> Config:
    """The validated ``[tool.tpu-migrate]`` table of ``pyproject`` (empty when it has none)."""
    table = _read_toml(pyproject).get("tool", {}).get("tpu-migrate", {})
    where = f"{pyproject}: [tool.tpu-migrate]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - set(KNOWN_KEYS))
    if unknown:
        raise ConfigError(
            f"{where} unknown key {unknown[0]!r}; known keys: {', '.join(KNOWN_KEYS)}"
        )
    select = _codes(table, "select", where) if "select" in table else None
    jobs = table.get("jobs")
    if jobs is not None and (type(jobs) is not int or jobs < 1):
        raise ConfigError(f"{where} jobs: expected a whole number of at least 1, got {jobs!r}")
    target = table.get("target", "torch_xla")
    if target not in TARGETS:
        raise ConfigError(
            f"{where} target: unknown target {target!r}; supported: {', '.join(TARGETS)}"
        )
    return Config(
        path=pyproject,
        select=select,
        ignore=_codes(table, "ignore", where),
        exclude=_strings(table, "exclude", where),
        jobs=jobs,
        target=target,
        options=_rule_options(table.get("options", {}), where),
    )


def _read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _strings(table: dict, key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where} {key}: expected a list of strings, got {value!r}")
    return tuple(value)


def _codes(table: dict, key: str, where: str) -> tuple[str, ...]:
    codes = tuple(code.strip().upper() for code in _strings(table, key, where))
    known = codemods.all_codes()
    for code in codes:
        if not code or not any(known_code.startswith(code) for known_code in known):
            raise ConfigError(
                f"{where} {key}: unknown rule code or prefix {code!r}; "
                "`tpu-migrate rules` lists them"
            )
    return codes


def _rule_options(options: object, where: str) -> dict[str, dict[str, object]]:
    """The options tables, checked, as {rule code: {option: value}}: the table of a code that
    was split goes to each of its parts that has the option (``codemods.options_by_rule``)."""
    if not isinstance(options, dict):
        raise ConfigError(
            f"{where} options: expected tables such as [tool.tpu-migrate.options.TPU101]"
        )
    checked: dict[str, dict[str, object]] = {}
    rules = {rule.CODE: rule for rule in codemods.PIPELINE}
    for code, values in options.items():
        key = f"{where} options.{code}"
        rule = rules.get(code.upper())
        if rule is None:
            raise ConfigError(f"{key}: {code!r} is not a rule code; `tpu-migrate rules` lists them")
        if not isinstance(values, dict):
            raise ConfigError(f"{key}: expected a table of options")
        parts = [rules[part] for part in codemods.parts_of(rule.CODE) if part in rules]
        for name, value in values.items():
            owners = [part for part in parts if name in part.OPTIONS]
            if not owners:
                known = ", ".join(sorted({o for part in parts for o in part.OPTIONS})) or "none"
                also = "" if len(parts) == 1 else f" nor do its parts {_listed(parts[1:])}"
                raise ConfigError(
                    f"{key}.{name}: {rule.CODE} has no option {name!r}{also} "
                    f"({'its' if len(parts) == 1 else 'their'} options: {known})"
                )
            for owner in owners:
                _check_option(owner, name, value, f"{key}.{name}")
        checked[rule.CODE] = dict(values)
    return codemods.options_by_rule(checked)


def _listed(rules: Sequence[type]) -> str:
    return ", ".join(rule.CODE for rule in rules)


def _check_option(rule: type, name: str, value: object, key: str) -> None:
    default = rule.OPTIONS[name]
    if isinstance(value, dict):  # options travel to worker processes in a hashable Selection
        raise ConfigError(f"{key}: expected a value or a list, not a table")
    if not _same_kind(value, default):
        raise ConfigError(
            f"{key}: expected {_kind(default)} like the default {default!r}, got {value!r}"
        )


def _same_kind(value: object, default: object) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return type(value) is type(default)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if isinstance(default, (list, tuple)):
        return isinstance(value, list) and (
            not default or all(_same_kind(item, default[0]) for item in value)
        )
    return type(value) is type(default) or default is None


def _kind(default: object) -> str:
    if isinstance(default, (list, tuple)):
        return "a list"
    return {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}.get(
        type(default), type(default).__name__
    )
