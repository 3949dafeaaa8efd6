"""What the torch.distributed rules share: TPU108 (the xla process group) and the rules split off
from it, TPU131 (rank and world size from the runtime), TPU132 (DDP's arguments), TPU133 (the
sampler's replicas), TPU134 (``torch.cuda.set_device``), TPU135 (``nn.DataParallel``) and TPU136
(``torch_xla.launch``).

``LaysOutRebuiltCalls`` gives the calls a rule rebuilt black's layout when their line grows past
``MAX_LINE``; the functions below build and read the arguments of those calls.
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst
import libcst.matchers as m
from libcst.metadata import ParentNodeProvider

from ._base import code_of, walk_all

INIT_PROCESS_GROUP = ("torch.distributed.init_process_group",)
MAX_LINE = 100


class LaysOutRebuiltCalls:
    """Mixin (before ``TpuCodemod`` in a rule's bases): ``rebuilt_call`` is the rule's
    ``leave_Call``; a call it returns in place of the one it was given is laid out as black would
    when its statement passes ``MAX_LINE`` columns. ``statement_left`` is the rule's
    ``leave_SimpleStatementLine``, given the line so laid out."""

    def __init__(self, context) -> None:
        super().__init__(context)  # type: ignore[call-arg]
        self._built_calls: list[cst.Call] = []  # calls this rule rebuilt: wrapped if too long

    def rebuilt_call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        return updated

    def statement_left(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        return updated

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        result = self.rebuilt_call(original_node, updated_node)
        if isinstance(result, cst.Call) and result is not updated_node:
            self._built_calls.append(result)
        return result

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        laid_out = self._wrapped_if_long(original_node, updated_node)
        return self.statement_left(original_node, laid_out)

    def _wrapped_if_long(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        """Black's layout for a call this rule rebuilt when its line passes ``MAX_LINE``."""
        if not self._built_calls:
            return updated
        indent = 4 * self._depth(original)
        code = code_of(updated.with_changes(leading_lines=()))
        if all(indent + len(line) <= MAX_LINE for line in code.splitlines()):
            return updated
        # one walk of the statement, not one per call built so far (a file with hundreds of
        # them made this quadratic)
        inside = {id(node) for node in walk_all(updated)}
        calls = [c for c in self._built_calls if id(c) in inside]
        self._built_calls = [c for c in self._built_calls if c not in calls]
        calls = [c for c in calls if c.args]  # ``xr.world_size()`` has nothing to wrap
        if not calls:
            return updated
        call = calls[-1]  # the outermost: built last
        for wrapped in (one_indented_line(call, indent), one_argument_per_line(call, indent)):
            candidate = updated.deep_replace(call, wrapped)
            text = code_of(candidate.with_changes(leading_lines=()))
            if all(indent + len(line) <= MAX_LINE for line in text.splitlines()):
                return candidate
        return candidate

    def _depth(self, node: cst.CSTNode) -> int:
        depth = 0
        current = self.get_metadata(ParentNodeProvider, node, None)
        while current is not None:
            if isinstance(current, cst.IndentedBlock):
                depth += 1
            current = self.get_metadata(ParentNodeProvider, current, None)
        return depth


def is_main_guard(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.If) and m.matches(
        statement.test,
        m.Comparison(
            left=m.Name("__name__"),
            comparisons=[m.ComparisonTarget(m.Equal(), m.SimpleString())],
        ),
    )


def backend_argument(call: cst.Call) -> cst.Arg | None:
    for argument in call.args:
        if argument.keyword is not None and argument.keyword.value == "backend":
            return argument
    if call.args and call.args[0].keyword is None and not call.args[0].star:
        return call.args[0]
    return None


def string_value(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    return None


def literal_text(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    if isinstance(node, cst.Integer):
        return node.value
    return None


def is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def is_empty_tuple(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Tuple) and not node.elements


def is_to_call_on(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"


def env_root(call: cst.Call) -> cst.BaseExpression:
    inner = call.args[0].value
    node = inner.value if isinstance(inner, cst.Subscript) else inner.func
    while isinstance(node, cst.Attribute):
        node = node.value
    return node


def assign_equal() -> cst.AssignEqual:
    return cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
    )


def with_commas(args: Sequence[cst.Arg]) -> list[cst.Arg]:
    """``args`` on one line, separated by ``, `` (``_wrapped_if_long`` breaks long lines)."""
    result = []
    for index, argument in enumerate(args):
        last = index == len(args) - 1
        comma = (
            cst.MaybeSentinel.DEFAULT
            if last
            else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
        result.append(
            argument.with_changes(comma=comma, whitespace_after_arg=cst.SimpleWhitespace(""))
        )
    return result


def has_global(function: cst.FunctionDef) -> bool:
    first = function.body.body[0] if function.body.body else None
    return isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Global)


def with_globals_first(
    function: cst.FunctionDef, moved: Sequence[tuple[str, cst.BaseExpression]]
) -> cst.FunctionDef:
    if has_global(function):
        return function
    names = ", ".join(name for name, _ in moved)
    new = [cst.parse_statement(f"global {names}\n")]
    for name, value in moved:
        new.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], value)]))
    body = function.body.body
    if body:
        new[0] = new[0].with_changes(leading_lines=body[0].leading_lines)
        body = [body[0].with_changes(leading_lines=()), *body[1:]]
    return function.with_changes(body=function.body.with_changes(body=[*new, *body]))


def newline_indent(extra: int) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(),
        indent=True,
        last_line=cst.SimpleWhitespace(" " * extra),
    )


def one_indented_line(call: cst.Call, indent: int) -> cst.Call:
    args = [a.with_changes(whitespace_after_arg=cst.SimpleWhitespace("")) for a in call.args]
    args[-1] = args[-1].with_changes(
        comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=newline_indent(0)
    )
    return call.with_changes(whitespace_before_args=newline_indent(4), args=args)


def one_argument_per_line(call: cst.Call, indent: int) -> cst.Call:
    args = []
    for index, argument in enumerate(call.args):
        last = index == len(call.args) - 1
        args.append(
            argument.with_changes(
                comma=cst.Comma(whitespace_after=newline_indent(0 if last else 4)),
                whitespace_after_arg=cst.SimpleWhitespace(""),
            )
        )
    return call.with_changes(whitespace_before_args=newline_indent(4), args=args)
