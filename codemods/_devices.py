"""What CUDA device code looks like: the spellings the device rules recognise, and the small
helpers they share (TPU101 device choices, TPU126 device strings, TPU127 device moves, TPU128
availability branches, TPU129 fused optimizers: one rule, TPU101, until they were split).

``codemods/_device_analysis.py`` holds the analysis of a file that all of them need.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Optional, Union

import libcst as cst

from migrate.fastcst.traversal import (
    handled_node_types,
    types_leading_nowhere,
    visit_without_copying,
)

from ._base import code_of, dotted_name, walk_all
from ._statements import Replacement

# Calls whose truth means "the CUDA-class accelerator is there": the migrated script takes that
# path.
ACCELERATOR_TESTS = frozenset({"torch.cuda.is_available", "torch.accelerator.is_available"})
# Availability of a device the migration abandons; a flag made of it goes when its uses do.
FALLBACK_TESTS = frozenset({"torch.backends.mps.is_available"})
AVAILABILITY_TESTS = ACCELERATOR_TESTS | FALLBACK_TESTS
CURRENT_ACCELERATOR = "torch.accelerator.current_accelerator"
TORCH_DEVICE = "torch.device"

CUDA_DEVICE = re.compile(r"cuda(:\d+)?")  # "cuda", "cuda:0"
CUDA_TEMPLATE = re.compile(r"cuda:(\{\w*\}|%[ds])")  # "cuda:{}".format(i), "cuda:%d" % i
FALLBACK_DEVICE = re.compile(r"(cpu|mps)(:\d+)?")
# Optimizer implementation options a script picks by asking whether the device is CUDA
# (``fused=device_type == "cuda"``, ``use_fused = fused_available and "cuda" in device``), and
# whether XLA tensors have them (measured with torch 2.9 + torch_xla 2.9 on XLA:CPU, Adam, AdamW,
# SGD): ``fused=True`` raises "`fused=True` requires all the params to be floating point Tensors
# of supported devices"; ``foreach=True`` runs (one graph per step, no CPU fallback, the for-loop's
# results). A decision about an option XLA lacks keeps asking about CUDA, so it is False on the
# XLA device as on the CPU; one about an option XLA has takes the XLA path like any device test.
KERNEL_OPTIONS = {"fused": False, "foreach": True}
XLA_LACKS = frozenset(option for option, on_xla in KERNEL_OPTIONS.items() if not on_xla)
# Names (variables, attributes, keys, parameters, options) holding a device string contain this...
CONFIG_WORD = "device"
# ...except these, which hold something else (accelerate's placement map, not a torch device).
NOT_CONFIG_WORDS = ("device_map",)
# Tensor methods whose `device=` takes a device object (the receiver's type is unknown statically).
TENSOR_DEVICE_METHODS = frozenset(
    {"to", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"}
)
# Statements after which the rest of their block never runs.
TERMINAL_STATEMENTS = (cst.Return, cst.Raise, cst.Break, cst.Continue)
# Expressions that never need parentheses to keep their meaning where another expression stood.
ATOMS = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.SimpleString,
    cst.FormattedString,
    cst.ConcatenatedString,
    cst.Integer,
    cst.Float,
    cst.Dict,
    cst.List,
    cst.Set,
    cst.Tuple,
)

# What a test becomes once the accelerator is known to be there: True/False when decided, a
# smaller expression when only part of it was about the accelerator, None when none of it was.
Verdict = Union[bool, cst.BaseExpression, None]


@dataclass
class Trace:
    """Nodes a rewrite makes disappear: folded accelerator tests and dropped code."""

    folded: list = field(default_factory=list)
    dropped: list = field(default_factory=list)

    def gone(self) -> set[int]:
        """Ids of every node that disappears."""
        ids = {id(node) for node in self.folded}
        for root in self.dropped:
            ids.update(id(node) for node in walk_all(root))
        return ids


class Collector(cst.CSTVisitor):
    """One pass over a rule's input: what the device rules' decisions depend on."""

    def __init__(self) -> None:
        self.ifs: list[cst.If] = []
        self.ifexps: list[cst.IfExp] = []
        self.calls: list[cst.Call] = []
        self.assignments: list = []  # (statement line, target, value) of one-target assignments
        self.assigned: list = []  # (target, value) of every assignment with a value
        self.keyword_args: list[cst.Arg] = []
        self.dict_elements: list[cst.DictElement] = []
        self.stored_attributes: dict[str, int] = {}  # dotted attribute -> assignments to it
        self.defines_cuda_api = False  # a `def cuda` or `class Device` of the user's own
        self._lines: list[cst.SimpleStatementLine] = []

    def visit_If(self, node: cst.If) -> None:
        self.ifs.append(node)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.ifexps.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.defines_cuda_api |= node.name.value == "cuda"

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.defines_cuda_api |= node.name.value == "Device"

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._lines.append(node)

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self._lines.pop()

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._count_store(node.target)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.assigned += [(target.target, node.value) for target in node.targets]
        if len(node.targets) == 1:
            self._record(node.targets[0].target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._count_store(node.target)
        if node.value is not None:
            self.assigned.append((node.target, node.value))
            self._record(node.target, node.value)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.keyword_args.append(node)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self.dict_elements.append(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._count_store(node.target)

    def _count_store(self, target: cst.BaseExpression) -> None:
        dotted = dotted_name(target)
        if isinstance(target, cst.Attribute) and dotted:
            self.stored_attributes[dotted] = self.stored_attributes.get(dotted, 0) + 1

    def _record(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        line = self._lines[-1] if self._lines else None
        if line is not None and len(line.body) == 1 and dotted_name(target):
            self.assignments.append((line, target, value))


def collect(module: cst.Module) -> Collector:
    """``module``'s ``Collector``, from a walk that does not enter what can hold nothing it
    collects (whitespace, commas, brackets: most of a tree)."""
    collector = Collector()
    visit_without_copying(module, collector, _collector_unentered())
    return collector


@functools.cache
def _collector_unentered() -> frozenset[type]:
    return types_leading_nowhere(handled_node_types(Collector))


def kernel_decisions(collector: Collector) -> set[int]:
    """Ids of the nodes of what decides an option XLA lacks (``fused``): the value of a
    ``fused=`` argument, of an assignment to a name, attribute or key that says it
    (``use_fused = ...``, ``kwargs["fused"] = ...``) or of such a dict entry; the test of
    ``X if <test> else Y`` when an arm sets the option (``dict(fused=True) if ... else
    dict()``), and of an ``if <test>:`` whose body is simple statements that all set it. The
    device rules leave these asking about CUDA: False on the XLA device, as on the CPU."""
    roots = [arg.value for arg in collector.keyword_args if lacking_option(arg.keyword.value)]
    roots += [
        element.value
        for element in collector.dict_elements
        if lacking_option(string_value(element.key) or "")
    ]
    roots += [
        value for target, value in collector.assigned if lacking_option(target_name(target) or "")
    ]
    roots += [
        ifexp.test
        for ifexp in collector.ifexps
        if sets_lacking_option(ifexp.body) or sets_lacking_option(ifexp.orelse)
    ]
    for node in collector.ifs:
        body = statements(node.body)
        if (
            body
            and all(type(statement) is cst.SimpleStatementLine for statement in body)
            and all(sets_lacking_option(statement) for statement in body)
        ):
            roots.append(node.test)
    return {id(node) for root in roots for node in walk_all(root)}


# --------------------------------------------------------------------- small helpers
def is_cuda_device_text(text: str) -> bool:
    """A string that may name a CUDA device, or its start in a template (``f"cuda:{i}"``)."""
    return CUDA_DEVICE.fullmatch(text) is not None or text.startswith("cuda:")


def only_calls(expression: cst.CSTNode, allowed) -> bool:
    """True when every call inside ``expression`` satisfies ``allowed`` (no side effects)."""
    return all(allowed(node) for node in walk_all(expression) if isinstance(node, cst.Call))


def string_value(node: Optional[cst.CSTNode]) -> Optional[str]:
    if isinstance(node, cst.SimpleString) and "b" not in node.prefix.lower():
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def cuda_literal(node: Optional[cst.CSTNode]) -> Optional[cst.BaseString]:
    """The string literal of a CUDA device spelling ("cuda", "cuda:0", f"cuda:{i}",
    "cuda:" + str(i), "cuda:{}".format(i), "cuda:%d" % i), for its quote style; else None."""
    if isinstance(node, cst.SimpleString):
        return node if CUDA_DEVICE.fullmatch(string_value(node) or "") else None
    if isinstance(node, cst.FormattedString) and node.parts:
        first, rest = node.parts[0], node.parts[1:]
        if not isinstance(first, cst.FormattedStringText):
            return None
        if (first.value == "cuda" and not rest) or (
            first.value == "cuda:"
            and rest
            and all(isinstance(part, cst.FormattedStringExpression) for part in rest)
        ):
            return node
        return None
    if isinstance(node, cst.BinaryOperation):
        left = string_value(node.left) or ""
        if isinstance(node.operator, cst.Add) and left == "cuda:":
            return node.left
        if isinstance(node.operator, cst.Modulo) and CUDA_TEMPLATE.fullmatch(left):
            return node.left
        return None
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "format"
        and CUDA_TEMPLATE.fullmatch(string_value(node.func.value) or "")
    ):
        return node.func.value
    return None


def statements(block: cst.BaseSuite) -> list:
    if isinstance(block, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=block.body)]
    return list(block.body)


def lacking_option(name: str) -> bool:
    """``name`` says an option XLA lacks: ``fused``, ``use_fused``, ``self.fused_adam``."""
    lowered = name.lower()
    return any(option in lowered for option in XLA_LACKS)


def sets_lacking_option(node: cst.CSTNode) -> bool:
    """``node`` mentions an option XLA lacks: ``dict(fused=True)``, ``kw["fused"] = True``."""
    return any(
        (isinstance(child, cst.Name) and lacking_option(child.value))
        or lacking_option(string_value(child) or "")
        for child in walk_all(node)
    )


def compares_device_string(node: cst.CSTNode) -> bool:
    """``"cuda" in device``, ``args.device != "cpu"``, ``device.type in ("cuda", "mps")``,
    ``device.startswith("cuda")``."""
    if isinstance(node, cst.Comparison):
        operands = [node.left] + [target.comparator for target in node.comparisons]
        return any(map(mentions_device, operands)) and any(map(device_names, operands))
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "startswith"
        and node.args
    ):
        return mentions_device(node.func.value) and device_names(node.args[0].value)
    return False


def device_names(node: cst.CSTNode) -> bool:
    """A device name ("cuda", "cuda:0", "cpu", "mps") or a tuple, list or set of them."""
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return bool(node.elements) and all(device_names(e.value) for e in node.elements)
    value = string_value(node) or ""
    return bool(CUDA_DEVICE.fullmatch(value) or FALLBACK_DEVICE.fullmatch(value))


def is_config_name(name: str) -> bool:
    lowered = name.lower()
    return CONFIG_WORD in lowered and not any(word in lowered for word in NOT_CONFIG_WORDS)


def mentions_device(node: cst.CSTNode) -> bool:
    """A device-ish expression: ``device``, ``args.device``, ``str(device)``, ``x.device.type``."""
    if not isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        return False
    return is_config_name(code_of(node))


def target_name(target: cst.CSTNode) -> Optional[str]:
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Attribute):
        return target.attr.value
    if isinstance(target, cst.Subscript) and len(target.slice) == 1:
        index = target.slice[0].slice
        if isinstance(index, cst.Index):
            return string_value(index.value)
    return None


def keyword(arg: cst.Arg) -> Optional[str]:
    return arg.keyword.value if arg.keyword is not None else None


def argument(call: cst.Call, position: int, name: str) -> Optional[cst.Arg]:
    """The argument of ``call`` given as ``name=`` or, else, at ``position``."""
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    for arg in call.args:
        if keyword(arg) == name:
            return arg
    return positional[position] if len(positional) > position else None


def with_args(call: cst.Call, args: list) -> cst.Call:
    """``call`` with ``args``: commas between them, the original end (trailing comma, line
    break before the closing parenthesis) kept."""
    last = call.args[-1] if call.args else cst.Arg(cst.Name("_"))
    args = list(args)
    for index, arg in enumerate(args[:-1]):
        if arg.comma is cst.MaybeSentinel.DEFAULT:
            args[index] = arg.with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
    if args:
        args[-1] = args[-1].with_changes(
            comma=last.comma, whitespace_after_arg=last.whitespace_after_arg
        )
    return call.with_changes(args=args)


def keep_parentheses(result: cst.BaseExpression, replaced: cst.BaseExpression):
    """``result`` stands where ``replaced`` stood: it inherits the parentheses it may need."""
    if replaced.lpar and not result.lpar and not isinstance(result, ATOMS):
        return result.with_changes(lpar=replaced.lpar, rpar=replaced.rpar)
    return result


def chain(head: cst.If):
    """The arms of an if/elif chain and its ``else`` (or None)."""
    arms, node = [head], head.orelse
    while isinstance(node, cst.If):
        arms.append(node)
        node = node.orelse
    return arms, node


def ends_terminal(block: cst.BaseSuite) -> bool:
    last = block.body[-1] if block.body else None
    if isinstance(block, cst.IndentedBlock):
        if not isinstance(last, cst.SimpleStatementLine):
            return False
        last = last.body[-1]
    return isinstance(last, TERMINAL_STATEMENTS)


def inline_block(block: cst.BaseSuite, leading: list) -> Replacement:
    """The statements of ``block`` at the level of the statement it belonged to; its header
    comment goes above them and its footer comments below them."""
    if isinstance(block, cst.SimpleStatementSuite):
        line = cst.SimpleStatementLine(
            body=block.body, trailing_whitespace=block.trailing_whitespace
        )
        return Replacement((line,), tuple(leading), (), ends_terminal(block))
    header = block.header.comment
    if header is not None:
        leading = [*leading, cst.EmptyLine(comment=header)]
    return Replacement(tuple(block.body), tuple(leading), tuple(block.footer), ends_terminal(block))


def joins_a_choice(value: cst.BaseExpression) -> bool:
    """``<choice> and <availability>``: an ``and`` one of whose operands calls nothing (the
    user's option, ``not args.no_cuda``), the other being the availability test."""
    if not (isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.And)):
        return False
    sides = [value.left, value.right]
    return any(not any(isinstance(n, cst.Call) for n in walk_all(side)) for side in sides)
