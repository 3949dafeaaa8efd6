"""Helpers for rules that edit function signatures and the calls that fill them: which argument
fills which parameter, and dropping items from a comma-separated list (arguments, parameters,
dict entries) so that the commas left read as a person would write them."""

from __future__ import annotations

import libcst as cst


def first_argument(call: cst.Call, keyword: str) -> cst.BaseExpression | None:
    """The value of the first parameter of ``call``, passed first or by its name ``keyword``."""
    for index, arg in enumerate(call.args):
        if arg.keyword is None and index == 0 and not arg.star:
            return arg.value
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    return None


def named_arguments(call: cst.Call, parameters) -> dict[str, cst.BaseExpression] | None:
    """Argument name -> value, positional ones named by ``parameters``; None with ``*args``."""
    named: dict[str, cst.BaseExpression] = {}
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is None:
            if index >= len(parameters):
                return None
            named[parameters[index]] = arg.value
        else:
            named[arg.keyword.value] = arg.value
    return named


def without_bare_star(parameters: cst.Parameters, changes: dict) -> dict:
    """``def f(a, *, scaler)`` without ``scaler``: the ``*`` goes too, ``a`` takes the comma
    that followed ``scaler`` (a trailing comma stays)."""
    comma = parameters.kwonly_params[-1].comma
    for kind in ("params", "posonly_params"):
        kept = list(changes.get(kind, getattr(parameters, kind)))
        if kept:
            kept[-1] = kept[-1].with_changes(comma=comma)
            return {kind: kept, "star_arg": cst.MaybeSentinel.DEFAULT}
    return {"star_arg": cst.MaybeSentinel.DEFAULT}


def parameter_for(
    function: cst.FunctionDef, call: cst.Call, arg: cst.Arg, skipped: int
) -> cst.Param | None:
    """The parameter of ``function`` that ``arg`` of ``call`` fills (``skipped``: ``self``)."""
    if any(a.star for a in call.args):
        return None
    parameters = function.params
    positional = [*parameters.posonly_params, *parameters.params][skipped:]
    if arg.keyword is not None:
        named = [p for p in positional if p not in parameters.posonly_params]
        named += parameters.kwonly_params
        return next((p for p in named if p.name.value == arg.keyword.value), None)
    index = [a for a in call.args if a.keyword is None].index(arg)
    return positional[index] if index < len(positional) else None


def argument_for(
    function: cst.FunctionDef, call: cst.Call, parameter: cst.Param, skipped: int
) -> cst.Arg | None:
    """The argument of ``call`` that fills ``parameter`` of ``function``; None when none does."""
    for arg in call.args:
        if parameter_for(function, call, arg, skipped) is parameter:
            return arg
    return None


def without_dropped(originals, updated, dropped: set[int]) -> list:
    kept = []
    for old, new in zip(originals, updated):
        if id(old) in dropped:
            if kept and new is updated[-1]:
                kept[-1] = kept[-1].with_changes(comma=new.comma)
            continue
        kept.append(new)
    if kept and len(kept) != len(updated) and not has_trailing_comma(updated):
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return kept


def has_trailing_comma(items) -> bool:
    return bool(items) and isinstance(items[-1].comma, cst.Comma)


def branch_statements(node: cst.If | cst.Else | None) -> list[cst.BaseStatement]:
    if node is None:
        return []
    body = node.body
    if isinstance(body, cst.IndentedBlock):
        return list(body.body)
    return [cst.SimpleStatementLine(body=list(body.body))]


def is_self_attribute(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    )
