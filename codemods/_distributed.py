"""Helpers of the torch.distributed rules (TPU108 and the rules split from it)."""

from __future__ import annotations

from typing import Sequence

import libcst as cst
import libcst.matchers as m


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
