"""Framework settings for a TPU: keyword arguments of a framework's classes, mapped as data.

TPU140 (Accelerate), TPU141 (Lightning) and TPU142 (the HF Trainer) configure a framework instead
of rewriting the loop it owns. Each lists ``Setting``s, one per keyword argument, and inherits
``ConfiguresFramework``, which finds the calls of the rule's classes and applies the table:

- a value is mapped where it is written: the literal itself (``precision="16-mixed"``), both arms
  of ``a if c else b`` (TPU101 then folds an availability test), what a local name is assigned
  (``mp = "fp16"``), or an argparse option read as ``args.name`` (its ``default=``, and its
  ``choices=`` so that the new default is one of them);
- some expressions stand for a value: ``torch.cuda.device_count()`` means "every device",
  ``torch.cuda.is_available()`` means True on the accelerator path the migration takes;
- a keyword may be renamed (``fp16`` -> ``bf16``), dropped (``tf32=True``), or added when the call
  does not give it (``optim=``);
- a value the rule cannot trace to a literal (a config dict, a parameter) is reported with the
  rule's finding code, naming what to set by hand.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Iterator, Mapping

import libcst as cst

from ._base import TpuCodemod, code_of, with_keyword_argument
from ._frameworks import PACKAGES, FrameworkClass
from ._loops import ModuleIndex, positional_arguments, without_items

Literal = object  # a str, int or bool as Python reads the source literal


@dataclass(frozen=True)
class Setting:
    """One keyword argument of a framework class and what it becomes on a TPU."""

    keyword: str
    # source literal -> the literal it becomes
    values: Mapping[Literal, Literal] = field(default_factory=dict)
    # for literals ``values`` does not list: the literal it becomes, or None to keep it
    convert: Callable[[Literal], Literal | None] | None = None
    # qualified names of calls that stand for a literal (``torch.cuda.device_count()``)
    calls: Mapping[str, Literal] = field(default_factory=dict)
    # a list or tuple literal as the value becomes this (``devices=[0, 1]`` -> "auto")
    collections: Literal | None = None
    rename: str | None = None  # the keyword the argument takes instead
    drop: tuple[Literal, ...] = ()  # literal values for which the argument is removed
    drop_always: bool = False  # the argument is removed whatever its value
    default: Literal | None = None  # added when the call does not pass the keyword
    # why a value the rule cannot trace must be checked by hand (the finding's message)
    unfollowed: str = ""
    # literal values with no TPU counterpart (prefixes of strings), reported with ``unsupported``
    unsupported_prefixes: tuple[str, ...] = ()
    unsupported: str = ""
    always_reported: bool = False  # the keyword itself is reported (``unfollowed``) wherever given

    def mapped(self, value: Literal) -> Literal | None:
        if _hashable(value) and value in self.values:
            return self.values[value]
        return self.convert(value) if self.convert is not None else None

    @property
    def maps_values(self) -> bool:
        return bool(self.values or self.convert or self.calls or self.collections is not None)


class ConfiguresFramework(TpuCodemod):
    """Base of the framework rules: applies ``SETTINGS`` to every call of ``CLASSES``."""

    CLASSES: ClassVar[tuple[FrameworkClass, ...]]
    SETTINGS: ClassVar[tuple[Setting, ...]]
    UNFOLLOWED: ClassVar[str]  # the finding code of values the rule cannot trace

    def __init__(self, context) -> None:
        super().__init__(context)
        self.replacements: dict[int, cst.BaseExpression] = {}  # id(original node) -> new node
        self.renamed: dict[int, str] = {}  # id(original Arg) -> its new keyword
        self.dropped: dict[int, set[int]] = {}  # id(original Call) -> ids of Args removed
        self.added: dict[int, list[tuple[str, Literal]]] = {}  # id(original Call) -> new args

    # ------------------------------------------------------------------ planning
    def visit_Module(self, node: cst.Module) -> bool:
        if not any(self.imports_module(package) for package in PACKAGES):
            return False
        self.index = ModuleIndex(self, node)
        frameworks = self.index.frameworks
        self._settings = {setting.keyword: setting for setting in self.SETTINGS}
        for call in self.index.calls:
            if any(frameworks.is_class(call.func, kind) for kind in self.CLASSES):
                self._plan_call(call)
        self.plan_more()
        return True

    def plan_more(self) -> None:
        """A rule's own planning beyond the settings table (its findings)."""

    def _plan_call(self, call: cst.Call) -> None:
        given = set()
        for arg in call.args:
            if arg.star == "**":
                return  # the settings may be in the dict: nothing is added or judged
            setting = self._settings.get(arg.keyword.value) if arg.keyword else None
            if setting is None:
                continue
            given.add(setting.keyword)
            self._plan_argument(call, arg, setting)
        for setting in self.SETTINGS:
            if setting.default is not None and setting.keyword not in given:
                self.added.setdefault(id(call), []).append((setting.keyword, setting.default))
                self.record_rewrite()

    def _plan_argument(self, call: cst.Call, arg: cst.Arg, setting: Setting) -> None:
        value = _literal(arg.value)
        if setting.drop_always or (value is not _NOT_LITERAL and value in setting.drop):
            self.dropped.setdefault(id(call), set()).add(id(arg))
            self.record_rewrite()
            return
        if setting.always_reported:
            self.flag(arg, self.UNFOLLOWED, setting.unfollowed)
            return
        if setting.rename is not None:
            self.renamed[id(arg)] = setting.rename
            self.record_rewrite()
        if not (setting.maps_values or setting.unsupported_prefixes):
            return
        sites = self._sites(arg.value)
        if sites is None:
            if setting.unfollowed:
                self.flag(arg, self.UNFOLLOWED, setting.unfollowed)
            return
        for site, option in sites:
            self._plan_site(site, option, setting)

    def _plan_site(self, site: cst.BaseExpression, option: cst.Call | None, setting: Setting) -> None:
        """Map one place a value is written; ``option``: the argparse option whose default or
        choices it is."""
        value = _literal(site)
        if isinstance(value, str) and value.startswith(setting.unsupported_prefixes or ("\0",)):
            self.flag(site, self.UNFOLLOWED, setting.unsupported)
            return
        if isinstance(site, cst.Call):
            names = self.qualified_names(site.func)
            new = next((setting.calls[n] for n in names if n in setting.calls), None)
        elif isinstance(site, (cst.List, cst.Tuple)):
            if self._is_choices(site):
                self._plan_choices(site, setting)
                return
            new = setting.collections
        else:
            new = setting.mapped(value) if value is not _NOT_LITERAL else None
            if new == value:
                new = None
        if new is not None and option is not None and _converts_strings(option, new):
            self.flag(site, self.UNFOLLOWED, f"{setting.unfollowed} (this option's type= "
                      f"cannot take {new!r})")
            return
        if new is not None and id(site) not in self.replacements:
            self.replacements[id(site)] = _literal_node(new, like=site)
            self.record_rewrite()

    def _plan_choices(self, choices: cst.List | cst.Tuple, setting: Setting) -> None:
        """An option's ``choices=``: each mapped value replaces its source, once."""
        present = {_literal(element.value) for element in choices.elements}
        elements, changed = [], False
        for element in choices.elements:
            value = _literal(element.value)
            new = setting.mapped(value) if value is not _NOT_LITERAL else None
            if new is None or new == value:
                elements.append(element)
                continue
            changed = True
            if new in present:
                continue  # already a choice: the old one goes
            present.add(new)
            elements.append(element.with_changes(value=_literal_node(new, like=element.value)))
        if changed and elements:
            elements[-1] = elements[-1].with_changes(comma=choices.elements[-1].comma)
            self.replacements[id(choices)] = choices.with_changes(elements=elements)

    # ------------------------------------------------------------------ where values come from
    def _sites(self, value: cst.BaseExpression, depth: int = 2, option: cst.Call | None = None):
        """The nodes that give ``value`` its value, each with the argparse option it is the
        default or choices of (else None); None when one of them cannot be traced."""
        if isinstance(value, cst.IfExp):
            body = self._sites(value.body, depth, option)
            orelse = self._sites(value.orelse, depth, option)
            return None if body is None or orelse is None else body + orelse
        if _literal(value) is not _NOT_LITERAL or isinstance(value, (cst.Call, cst.List, cst.Tuple)):
            return [(value, option)]
        if depth == 0:
            return None
        if isinstance(value, cst.Name):
            bound = self.index.binding_values(value)
            if not bound:
                return None
            found: list = []
            for assigned in bound:
                sites = self._sites(assigned, depth - 1)
                if sites is None:
                    return None
                found += sites
            return found
        if isinstance(value, cst.Attribute):
            options = list(self._argparse_options(value.attr.value))
            if not options:
                return None
            found = []
            for call in options:
                for arg in call.args:
                    if arg.keyword and arg.keyword.value in ("default", "choices"):
                        found += self._sites(arg.value, depth - 1, call) or []
            return found
        return None

    def _argparse_options(self, dest: str) -> Iterator[cst.Call]:
        """``parser.add_argument("--mixed-precision", ...)`` calls whose destination is
        ``dest`` (given as ``dest=`` or derived from the first long option, as argparse does)."""
        for call in self.index.calls:
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "add_argument":
                if _argparse_dest(call) == dest:
                    yield call

    def _is_choices(self, node: cst.CSTNode) -> bool:
        arg = self.index.parent(node)
        return isinstance(arg, cst.Arg) and arg.keyword is not None and arg.keyword.value == "choices"

    # ------------------------------------------------------------------ rewriting
    def _replaced(self, original, updated):
        return self.replacements.get(id(original), updated)

    leave_SimpleString = leave_Integer = leave_UnaryOperation = leave_Name = _replaced
    leave_List = leave_Tuple = _replaced

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        keyword = self.renamed.get(id(original_node))
        if keyword is None:
            return updated_node
        return updated_node.with_changes(keyword=cst.Name(keyword))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        replacement = self.replacements.get(id(original_node))
        if replacement is not None:
            return replacement
        dropped = self.dropped.get(id(original_node))
        if dropped:
            gone = {id(new) for old, new in zip(original_node.args, updated_node.args) if id(old) in dropped}
            args = without_items(updated_node.args, lambda arg: id(arg) in gone)
            updated_node = updated_node.with_changes(args=args)
        for keyword, value in self.added.get(id(original_node), ()):
            updated_node = with_keyword_argument(updated_node, keyword, _literal_node(value))
        return updated_node


_NOT_LITERAL = object()


def _literal(node: cst.CSTNode) -> Literal:
    """The Python value of a literal node (a string, a number, -1, True/False/None), else
    ``_NOT_LITERAL``."""
    if isinstance(node, (cst.SimpleString, cst.Integer, cst.UnaryOperation, cst.Float)) or (
        isinstance(node, cst.Name) and node.value in ("True", "False", "None")
    ):
        try:
            return ast.literal_eval(code_of(node))
        except (ValueError, SyntaxError):
            return _NOT_LITERAL
    return _NOT_LITERAL


def _literal_node(value: Literal, like: cst.CSTNode | None = None) -> cst.BaseExpression:
    """``value`` as source, a string in the quotes of the string it replaces."""
    if isinstance(value, str):
        quote = "'" if isinstance(like, cst.SimpleString) and like.value.startswith("'") else '"'
        return cst.SimpleString(f"{quote}{value}{quote}")
    return cst.parse_expression(repr(value))


def _hashable(value: Literal) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _converts_strings(option: cst.Call, new: Literal) -> bool:
    """argparse runs a string default through the option's ``type=``: a new string default of
    an option typed otherwise (``type=int``) would fail to parse."""
    kind = next(
        (code_of(arg.value) for arg in option.args if arg.keyword and arg.keyword.value == "type"),
        "str",
    )
    return isinstance(new, str) and kind != "str"


def _argparse_dest(call: cst.Call) -> str | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dest":
            dest = _literal(arg.value)
            return dest if isinstance(dest, str) else None
    flags = [_literal(arg.value) for arg in positional_arguments(call)]
    flags = [flag for flag in flags if isinstance(flag, str)]
    long = next((flag for flag in flags if flag.startswith("--")), None)
    chosen = long or next(iter(flags), None)
    return chosen.lstrip("-").replace("-", "_") if chosen else None
