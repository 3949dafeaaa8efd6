"""The pipeline's import step, run on as little of the module as gives libcst's own result.

libcst's ``AddImportsVisitor`` and ``RemoveImportsVisitor`` walk the whole tree through its
matcher machinery, and the remover also resolves the scopes and qualified names of the whole
module to tell which imports are unused. Each shortcut below runs the same visitor on the part of
the module it can change (the remover not at all when the text shows it keeps everything), and
only where that provably gives the same result (``tests/engine/test_fast_paths.py`` compares
them with the visitors run on the whole module).
"""

from __future__ import annotations

import ast
import re
from contextlib import contextmanager
from dataclasses import replace
from functools import lru_cache
from typing import Iterable, Iterator, Sequence

import libcst as cst
import libcst.matchers._visitors as matcher_visitors  # private: see visitors_set_up_faster
from libcst.codemod import Codemod, CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import MetadataWrapper, ScopeProvider

from . import plain_libcst
from .codegen import module_code
from .metadata import _empty_scopes
from .matchers import MATCHER_ATTRIBUTES

ImportRequest = tuple[str, str | None, str | None]  # (module, obj, asname), libcst's form


# What libcst's matcher-decorated visitors gather when one is made: the methods and matchers of
# its class that carry a decorator (``@m.visit``, ``@m.call_if_inside``...)
_GATHERERS = (
    "_gather_constructed_visit_funcs",
    "_gather_constructed_leave_funcs",
    "_gather_matchers",
)


@contextmanager
def visitors_set_up_faster() -> Iterator[None]:
    """While the imports are fixed, libcst's visitors of a class with no decorated method
    skip looking for them.

    Each ``AddImportsVisitor``, ``RemoveImportsVisitor`` and the visitors they start looks up
    every attribute of itself, three times, for methods carrying a matcher decorator: about 8
    ms per visitor, most of the import step (over a quarter of the torch sources, 2.1 s, then
    1.3 s), and a fifth of a small project's run. libcst's import visitors have none. A visitor
    none of whose class's functions (nor its own attributes) carries a decorator's attribute
    is answered with an empty result, the answer libcst's own search gives; the functions of a
    class are looked at once. Any other visitor gets libcst's search.
    """
    if plain_libcst():
        yield
        return
    originals = {
        name: getattr(matcher_visitors, name)
        for name in _GATHERERS
        if hasattr(matcher_visitors, name)  # (else libcst changed: it is left alone)
    }
    for name, gather in originals.items():
        setattr(matcher_visitors, name, _skipped_when_nothing_is_decorated(gather))
    try:
        yield
    finally:
        for name, gather in originals.items():
            setattr(matcher_visitors, name, gather)


def _skipped_when_nothing_is_decorated(gather):
    def gathered(visitor: object) -> dict:
        if _class_decorates_nothing(type(visitor)) and not any(
            map(_is_decorated, getattr(visitor, "__dict__", {}).values())
        ):
            return {}
        return gather(visitor)

    return gathered


def _class_decorates_nothing(cls: type) -> bool:
    return all(map(_own_functions_decorate_nothing, cls.__mro__))


@lru_cache(maxsize=None)
def _own_functions_decorate_nothing(cls: type) -> bool:
    # (once per class: libcst's base visitors, with a method for each node type, are the bases
    # of all the import visitors)
    return not any(
        _is_decorated(getattr(value, "__func__", value))  # (class and static methods)
        for value in vars(cls).values()
    )


def _is_decorated(value: object) -> bool:
    return any(hasattr(value, attribute) for attribute in MATCHER_ATTRIBUTES)


def with_imports_added(module: cst.Module, context: CodemodContext) -> cst.Module:
    """What libcst's ``AddImportsVisitor`` makes of ``module``, run on its head only.

    The visitor reads and edits just the block of imports at the top of the file and the first
    statement after it (it adds a blank line there). Given the head up to and including that
    statement, it gives the same head; the rest of the body is kept as it is.

    Of a compound statement in the head (a class or function right after the imports), the
    visitor reads and edits only the blank lines and comments above it: it sees a ``pass``
    holding them instead of walking the whole class, and the statement gets back what the
    visitor made of them. (The visitor edits only the imports it gathered, which stop at the
    first statement that is not one, and the lines above that statement.)
    """
    if plain_libcst():
        return Codemod.transform_module(AddImportsVisitor(context), module)
    body = module.body
    end = 1  # the first statement may be a docstring, which the visitor steps over
    while end < len(body) and _is_single_import(body[end]):
        end += 1
    head = list(body[: end + 1])
    compound = {
        index: statement
        for index, statement in enumerate(head)
        if isinstance(statement, cst.BaseCompoundStatement)
    }
    for index, statement in compound.items():
        head[index] = _stand_in(statement)
    new_head = list(module.with_changes(body=head).visit(AddImportsVisitor(context)).body)
    # The visitor only inserts imports, all of them before the first statement that is not one
    # (a compound statement never is): each stand-in is as many places further down.
    added = len(new_head) - len(head)
    for index, statement in compound.items():
        lines = new_head[index + added].leading_lines
        if not _same_nodes(lines, statement.leading_lines):  # (the visitor rebuilds every node)
            statement = statement.with_changes(leading_lines=lines)
        new_head[index + added] = statement
    return module.with_changes(body=(*new_head, *body[end + 1 :]))


def _same_nodes(these: Sequence[cst.CSTNode], those: Sequence[cst.CSTNode]) -> bool:
    return len(these) == len(those) and all(a.deep_equals(b) for a, b in zip(these, those))


def _stand_in(statement: cst.BaseCompoundStatement) -> cst.SimpleStatementLine:
    """A one-word statement with ``statement``'s leading lines, all the visitor reads of it."""
    return cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=statement.leading_lines)


def with_imports_removed(
    module: cst.Module, context: CodemodContext, code: str | None = None
) -> cst.Module | None:
    """What libcst's ``RemoveImportsVisitor`` makes of ``module``, or None when that cannot be
    told without the visitor's whole-module analysis.

    The visitor removes an import it was asked to remove when no import of the same name is
    used: no reference, no ``__all__`` entry, no string annotation. Two cases are plain from the
    text, and when every name asked about is one or the other the visitor runs only where it
    removes something:

    * the name appears in the code text (comments and strings included) only inside import
      statements at the top level of the module: nothing can use it, so running the visitor on
      each of those statements alone removes what it removes on the whole module;
    * the name is used: in every scope that imports it, that scope's own code reads it after
      the first of those imports; or it is bound only by imports of the module's own scope and
      read inside a function, class, lambda or comprehension. Either way each scope's first
      import is referenced, so the visitor keeps them all.

    A third case needs Python's parser too: the name is elsewhere in the text only as words the
    visitor does not count as a use (an attribute such as ``torch.autocast``, a comment). Then
    it is unused, as in the first case (``_never_used``).
    """
    if plain_libcst():
        return None
    requests: list[ImportRequest] = context.scratch.get(RemoveImportsVisitor.CONTEXT_KEY, [])
    code = module_code(module) if code is None else code  # (the caller may have it)
    statements = _top_level_statements_with_imports(module)
    tree: ast.Module | None = None
    scoped: list[tuple[ast.AST, ast.AST]] = []
    unused, statements_to_visit = [], set()
    for name in dict.fromkeys(_bound_name(*request) for request in requests):
        word = _word(name)
        counts = [
            (statement, sum(len(word.findall(text)) for text in import_codes))
            for statement, import_codes in statements
        ]
        if sum(count for _, count in counts) == len(word.findall(code)):
            unused.append(name)
            statements_to_visit.update(id(statement) for statement, count in counts if count)
            continue
        if tree is None:
            tree = _parsed(code)
            if tree is None:
                return None
            scoped = _nodes_in_scopes(tree)  # once per module, whatever the names asked about
        if _never_used(tree, name, word):
            unused.append(name)
            statements_to_visit.update(id(statement) for statement, count in counts if count)
        elif not _is_used(tree, scoped, name):
            return None
    if not unused:
        return module
    # The visitor must not see the requests about names in use: alone, their imports look unused.
    alone_context = replace(
        context,
        scratch={
            **context.scratch,
            RemoveImportsVisitor.CONTEXT_KEY: [r for r in requests if _bound_name(*r) in unused],
        },
    )
    body: list[cst.BaseStatement] = []
    for statement in module.body:
        if id(statement) in statements_to_visit:
            alone = module.with_changes(body=[statement])
            body.extend(_imports_removed_alone(alone, alone_context).body)
        else:
            body.append(statement)
    return module.with_changes(body=body)


def _imports_removed_alone(alone: cst.Module, context: CodemodContext) -> cst.Module:
    """``RemoveImportsVisitor(context).transform_module(alone)``, with the scopes it computed
    emptied after: they refer to the import it removes, which would otherwise wait with them for
    the cycle collector (``metadata._empty_scopes``)."""
    visitor = RemoveImportsVisitor(context)
    wrapper = MetadataWrapper(alone)
    with visitor.resolve(wrapper):
        visitor.context = replace(visitor.context, wrapper=wrapper)
        result = visitor.transform_module_impl(wrapper.module)
    _empty_scopes(wrapper.resolve(ScopeProvider))  # resolved for the visitor: no new work
    return result


def _parsed(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _never_used(tree: ast.Module, name: str, word: re.Pattern[str]) -> bool:
    """No code can use ``name``: no name node is ``name``, no string holds the word (an
    ``__all__`` entry, a string annotation), and only imports at the top level of the module
    bind it. The visitor then finds each of those imports unused, on the whole module as on
    their statements alone."""
    top_level_imports = {id(node) for node in tree.body if isinstance(node, _IMPORTS)}
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Name:
            if node.id == name:
                return False
        elif kind is ast.Constant:
            if type(node.value) is str and word.search(node.value):
                return False
        elif _is_binding(node, name) and id(node) not in top_level_imports:
            return False
    return True


def _is_used(tree: ast.Module, scoped: list[tuple[ast.AST, ast.AST]], name: str) -> bool:
    return _read_after_its_imports(scoped, name) or _global_read_in_a_nested_scope(
        tree, scoped, name
    )


def _read_after_its_imports(scoped: list[tuple[ast.AST, ast.AST]], name: str) -> bool:
    """In each scope (module, class, function) whose own code imports ``name``, that code reads
    ``name`` on a line after the first of those imports.

    libcst links a read to the bindings made before it in its own scope, so the first import of
    each such scope is referenced, and the remover keeps every import of a name whose scope has a
    referenced one.
    """
    first_import_end: dict[ast.AST, int] = {}
    for scope, node in scoped:
        if isinstance(node, _IMPORTS) and any(_binds(alias, name) for alias in node.names):
            first_import_end[scope] = min(
                node.end_lineno, first_import_end.get(scope, node.end_lineno)
            )
    read_after = {
        scope
        for scope, node in scoped
        if _reads(node, name)
        and scope in first_import_end
        and node.lineno > first_import_end[scope]
    }
    return bool(first_import_end) and read_after == first_import_end.keys()


def _global_read_in_a_nested_scope(
    tree: ast.Module, scoped: list[tuple[ast.AST, ast.AST]], name: str
) -> bool:
    """Nothing binds ``name`` but imports in the module's own scope, and code in a function,
    class, lambda or comprehension body reads it: that read finds the module's bindings, and
    libcst links a read from another scope to all of them, whatever their order."""
    module_imports = {
        id(node) for scope, node in scoped if scope is tree and isinstance(node, _IMPORTS)
    }
    imported = False
    for node in ast.walk(tree):
        if not _is_binding(node, name):
            continue
        if id(node) not in module_imports:
            return False
        imported = True
    return imported and any(scope is not tree and _reads(node, name) for scope, node in scoped)


def _reads(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)


def _is_binding(node: ast.AST, name: str) -> bool:
    """Whether ``node`` binds ``name`` (or declares it global or nonlocal)."""
    if isinstance(node, _IMPORTS):
        return any(_binds(alias, name) for alias in node.names)
    if isinstance(node, ast.Name):
        return node.id == name and not isinstance(node.ctx, ast.Load)
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return name in node.names
    if isinstance(node, ast.arg):
        return node.arg == name
    if isinstance(node, ast.MatchMapping):
        return node.rest == name
    if isinstance(node, ast.alias):  # its import statement binds
        return False
    return getattr(node, "name", None) == name  # def, class, except ... as, match captures


def _nodes_in_scopes(tree: ast.Module) -> list[tuple[ast.AST, ast.AST]]:
    """(scope, node) for the nodes of ``tree`` and the scope each runs in: the module, or the
    function, class, lambda or comprehension whose body (for a comprehension, its result
    expressions) holds it. A decorator runs in the scope around what it decorates (libcst
    visits a function's decorators after its body, which changes no order this analysis
    reads: a scope's own imports are never inside a function it defines). Left out, so that
    nothing is concluded from them: annotations, ``match`` patterns, defaults, base classes
    and a comprehension's ``for`` and ``if`` clauses."""
    found: list[tuple[ast.AST, ast.AST]] = []
    stack: list[tuple[ast.AST, ast.AST]] = [(tree, node) for node in tree.body]
    while stack:
        scope, node = stack.pop()
        if isinstance(node, ast.pattern):
            continue
        found.append((scope, node))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend((node, child) for child in node.body)
            stack.extend((scope, decorator) for decorator in node.decorator_list)
        elif isinstance(node, ast.Lambda):
            stack.append((node, node.body))
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            stack.append((node, node.elt))
        elif isinstance(node, ast.DictComp):
            stack.extend(((node, node.key), (node, node.value)))
        elif isinstance(node, ast.AnnAssign):
            stack.extend((scope, child) for child in (node.target, node.value) if child)
        else:
            stack.extend((scope, child) for child in ast.iter_child_nodes(node))
    return found


def _binds(alias: ast.alias, name: str) -> bool:
    # ``alias.name`` is the module of ``import a.b`` or the object of ``from m import x``: the
    # same rule as for a request names what either binds.
    return _bound_name(alias.name, None, alias.asname) == name


_IMPORTS = (ast.Import, ast.ImportFrom)


def _bound_name(module: str, obj: str | None, asname: str | None) -> str:
    """The name an import binds: ``xm`` for ``import a.b as xm``, ``a`` for ``import a.b``."""
    return asname or obj or module.split(".")[0]


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")


def _top_level_statements_with_imports(
    module: cst.Module,
) -> list[tuple[cst.SimpleStatementLine, list[str]]]:
    """Each statement line at module level holding an import, with the code of its imports
    (not of the rest of the line: ``import a; print(a)`` uses ``a`` outside the import)."""
    found = []
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            imports = _imports_in(statement.body)
            if imports:
                found.append((statement, [module.code_for_node(node) for node in imports]))
    return found


def _imports_in(small_statements: Iterable[cst.BaseSmallStatement]) -> list[cst.CSTNode]:
    return [node for node in small_statements if isinstance(node, (cst.Import, cst.ImportFrom))]


def _is_single_import(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], (cst.Import, cst.ImportFrom))
    )
