"""Rules walk a tree as libcst's ``visit`` does, without copying the nodes they leave alone."""

from __future__ import annotations

import typing
from collections import Counter
from pathlib import Path

import libcst as cst
import libcst.matchers as m
import pytest
from libcst.codemod import CodemodContext, SkipFile
from libcst.codemod.visitors import AddImportsVisitor
from libcst.metadata.expression_context_provider import ExpressionContextVisitor
from libcst.metadata.scope_provider import ScopeVisitor

import codemods
from codemods._base import (
    ALWAYS_ENTERED,
    FINDINGS_KEY,
    REWRITES_KEY,
    TpuCodemod,
    walk_all,
    walk_pruned,
)
from codemods._loops import ModuleIndex, assigned_pairs
from migrate.fastcst.traversal import (
    LAYOUT,
    _concrete_node_types,
    _concrete_types_of,
    _field_admits,
    _fields_to_walk,
    _node_classes_in,
    _reacts_to_fields,
    _types_below,
    children_of,
    handled_node_types,
    own_method,
    types_leading_nowhere,
    visit_without_copying,
    visited_fields,
)
from codemods.testing import case_sources
from migrate.fastcst import metadata
from migrate.engine import Selection, run_pipeline

REPO = Path(__file__).resolve().parents[2]

ALL_CASES = [pytest.param(rule, source, id=ident) for rule, ident, source in case_sources()]


def _with_libcsts_visit(monkeypatch) -> None:
    monkeypatch.setattr(TpuCodemod, "transform_module_impl", lambda self, tree: tree.visit(self))


def _rule_run(rule: type, source: str) -> tuple:
    """Everything one pass of ``rule`` leaves: code, findings, rewrites, imports asked for."""
    context = CodemodContext(filename="case.py")
    try:
        code = rule(context).transform_module(cst.parse_module(source)).code
    except SkipFile:
        code = None
    return (
        code,
        context.scratch.get(FINDINGS_KEY, []),
        dict(context.scratch.get(REWRITES_KEY, Counter())),
        context.scratch.get(AddImportsVisitor.CONTEXT_KEY, []),
    )


@pytest.mark.parametrize("rule, source", ALL_CASES)
def test_each_rule_does_what_it_does_under_libcsts_visit(rule, source, monkeypatch):
    ours = _rule_run(rule, source)
    _with_libcsts_visit(monkeypatch)
    assert ours == _rule_run(rule, source)


def _acted_on_sources() -> list[Path]:
    """Torch files several rules act on (findings and rewrites), and the fixtures' projects."""
    torch = pytest.importorskip("torch")
    torch_dir = Path(torch.__file__).parent
    picks = [
        "_dynamo/repro/aoti.py",
        "multiprocessing/reductions.py",
        "cuda/_utils.py",
        "testing/_internal/distributed/rpc/dist_optimizer_test.py",
        "distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py",
    ]
    fixtures = sorted((REPO / "fixtures").glob("*/before/**/*.py"))
    return [torch_dir / p for p in picks if (torch_dir / p).exists()] + fixtures


def _acted_on_params(value, paths: list[Path] | None = None) -> list:
    """``value(path)`` of each of ``_acted_on_sources()`` (or of ``paths``); torch's own files
    are left to the full suite (``slow``)."""
    fixtures = REPO / "fixtures"  # (not REPO: the venv, torch included, may live in the checkout)
    return [
        pytest.param(
            value(path),
            id=f"{path.parent.name}/{path.name}",
            marks=[] if path.is_relative_to(fixtures) else [pytest.mark.slow],
        )
        for path in (_acted_on_sources() if paths is None else paths)
    ]


def _walking_everything(monkeypatch) -> None:
    """Every rule enters every node, as before a rule's walk left out the node types holding
    nothing it handles."""
    for rule in codemods.PIPELINE:
        monkeypatch.setattr(rule, "_unentered", frozenset())


@pytest.mark.parametrize("other_walk", [_with_libcsts_visit, _walking_everything])
@pytest.mark.parametrize("path", _acted_on_params(lambda p: p))
def test_the_pipeline_gives_the_same_under_libcsts_visit_or_a_full_walk(
    path, other_walk, monkeypatch
):
    text = path.read_text(encoding="utf-8")
    selection = Selection.from_options()
    ours = run_pipeline(cst.parse_module(text), text, selection, str(path))
    other_walk(monkeypatch)
    assert ours == run_pipeline(cst.parse_module(text), text, selection, str(path))


class _CallLog:
    """Every call libcst makes on a visitor, in order (mixed into a visitor class)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.calls.append(("visit", type(node).__name__, id(node)))
        return not isinstance(node, cst.Lambda)  # (and one kind of subtree skipped)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.calls.append(("visit attribute", attribute, id(node)))

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        self.calls.append(("leave attribute", attribute, id(original_node)))


class _Recorder(_CallLog, cst.CSTTransformer):
    def on_leave(self, original_node, updated_node):
        self.calls.append(("leave", type(original_node).__name__, id(original_node)))
        return updated_node


class _VisitorRecorder(_CallLog, cst.CSTVisitor):
    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.calls.append(("leave", type(original_node).__name__, id(original_node)))


@pytest.mark.parametrize("recorder", [_Recorder, _VisitorRecorder])
@pytest.mark.parametrize("path", _acted_on_params(lambda p: p, _acted_on_sources()[:8]))
def test_the_visitor_is_called_as_libcst_calls_it(path, recorder):
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    ours, theirs = recorder(), recorder()
    assert visit_without_copying(module, ours) is module
    module.visit(theirs)
    assert ours.calls == theirs.calls


def test_an_f_string_format_spec_is_visited_as_libcst_visits_it():
    module = cst.parse_module('a = f"{x:>{width}}"\nb = f"{y}"\nc = f"{z!r:{w}}"\n')
    ours, theirs = _Recorder(), _Recorder()
    visit_without_copying(module, ours)
    module.visit(theirs)
    assert ours.calls == theirs.calls


class _Rename(cst.CSTTransformer):
    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return (
            updated_node.with_changes(value=self.new)
            if updated_node.value == self.old
            else updated_node
        )


class _EditStatements(cst.CSTTransformer):
    """Removes ``drop()`` statements and doubles ``twice()`` ones."""

    def leave_SimpleStatementLine(self, original_node, updated_node):
        code = cst.Module([]).code_for_node(updated_node).strip()
        if code == "drop()":
            return cst.RemoveFromParent()
        if code == "twice()":
            return cst.FlattenSentinel([updated_node, updated_node])
        return updated_node


def test_only_the_path_to_an_edit_is_rebuilt():
    module = cst.parse_module("def f():\n    return x\n\ndef g():\n    return y\n")
    renamed = visit_without_copying(module, _Rename("x", "z"))
    assert renamed.code == module.visit(_Rename("x", "z")).code
    assert renamed.code == "def f():\n    return z\n\ndef g():\n    return y\n"
    assert renamed.body[1] is module.body[1]  # g, untouched
    assert renamed.body[0] is not module.body[0]
    assert renamed.body[0].name is module.body[0].name


def test_removal_and_flattening_are_libcsts():
    source = "a()\ndrop()\nif c:\n    twice()\n    drop()\n    b()\nx = [drop(), twice()]\n"
    module = cst.parse_module(source)
    ours = visit_without_copying(module, _EditStatements())
    assert ours.code == module.visit(_EditStatements()).code
    assert ours.code == "a()\nif c:\n    twice()\n    twice()\n    b()\nx = [drop(), twice()]\n"


def test_a_removal_where_none_is_allowed_fails_as_in_libcst():
    class RemoveNames(cst.CSTTransformer):
        def leave_Name(self, original_node, updated_node):
            return cst.RemoveFromParent()

    module = cst.parse_module("x.y\n")
    with pytest.raises(TypeError, match="does not allow it to be removed"):
        module.visit(RemoveNames())
    with pytest.raises(TypeError, match="does not allow it to be removed"):
        visit_without_copying(module, RemoveNames())


def test_a_leave_method_returning_no_node_fails_as_in_libcst():
    class ReturnsNone(cst.CSTTransformer):
        def leave_Name(self, original_node, updated_node):
            return None

    module = cst.parse_module("x\n")
    with pytest.raises(cst.CSTValidationError):
        module.visit(ReturnsNone())
    with pytest.raises(cst.CSTValidationError):
        visit_without_copying(module, ReturnsNone())


def test_a_node_held_twice_gets_each_of_its_results():
    statement = cst.parse_statement("x = x\n")
    module = cst.Module(body=[statement, cst.parse_statement("y = 1\n"), statement])
    ours = visit_without_copying(module, _Rename("x", "z"))
    assert ours.code == module.visit(_Rename("x", "z")).code == "z = z\ny = 1\nz = z\n"


class _IndexReference(cst.CSTVisitor):
    """What ``ModuleIndex`` collects, gathered by libcst's own visit with a stack of ancestors."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[cst.CSTNode] = []
        self.parents: dict[int, int] = {}
        self.found: list[tuple[str, int]] = []
        self.bindings: list[tuple[int, int, int, int, int | None]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.stack and type(node) not in LAYOUT:  # (the index leaves layout out)
            self.parents[id(node)] = id(self.stack[-1])
        self.stack.append(node)
        if isinstance(node, (cst.Call, cst.For, cst.While, cst.FunctionDef, cst.ClassDef)):
            self.found.append((type(node).__name__, id(node)))
        if type(node) not in LAYOUT and not any(type(n) in LAYOUT for n in self.stack):
            self.found.append(("any", id(node)))
        if isinstance(node, cst.SimpleStatementLine):
            owner = next(
                n for n in reversed(self.stack) if isinstance(n, (cst.FunctionDef, cst.Module))
            )
            cls = next((n for n in reversed(self.stack) if isinstance(n, cst.ClassDef)), None)
            for small in node.body:
                for target, value in assigned_pairs(small):
                    self.bindings.append(
                        (id(node), id(target), id(value), id(owner), cls and id(cls))
                    )
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


@pytest.mark.parametrize("path", _acted_on_params(lambda p: p))
def test_the_module_index_walk_sees_what_libcsts_visit_sees(path):
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    index = ModuleIndex(None, module)
    reference = _IndexReference()
    module.visit(reference)
    assert {child: id(parent) for child, parent in index.parents.items()} == reference.parents
    for kind, nodes in (
        ("Call", index.calls),
        ("For", index.for_loops),
        ("While", index.while_loops),
        ("FunctionDef", index.functions),
        ("ClassDef", index.classes),
        ("any", index.nodes),
    ):
        assert [id(n) for n in nodes] == [i for k, i in reference.found if k == kind]
    assert [
        (id(b.statement), id(b.target), id(b.value), id(b.owner)) for b in index.all_bindings
    ] == [binding[:4] for binding in reference.bindings]
    assert all(
        index.bindings[id(b.target)] is b
        for b in index.all_bindings
        if isinstance(b.target, cst.Name)
    )
    expected_self_bindings: dict[tuple[int, str], list[int]] = {}
    for binding, (*_, owner, cls) in zip(index.all_bindings, reference.bindings):
        target = binding.target
        if (
            m.matches(target, m.Attribute(value=m.Name("self")))
            and isinstance(binding.owner, cst.FunctionDef)
            and cls is not None
        ):
            expected_self_bindings.setdefault((cls, target.attr.value), []).append(id(binding))
    assert {
        key: [id(b) for b in bindings] for key, bindings in index.self_bindings.items()
    } == expected_self_bindings


class _FieldHandlers(cst.CSTVisitor):
    """A visitor reacting to fields through libcst's by-name methods only."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple] = []

    def visit_Call_args(self, node: cst.Call) -> None:
        self.calls.append(("args", id(node)))

    def leave_Call_func(self, node: cst.Call) -> None:
        self.calls.append(("func left", id(node)))


class _MatcherFieldHandlers(m.MatcherDecoratableTransformer):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple] = []

    def visit_Attribute_attr(self, node: cst.Attribute) -> None:
        self.calls.append(("attr", id(node)))


@pytest.mark.parametrize("visitor", [_FieldHandlers, _MatcherFieldHandlers])
def test_by_name_field_handlers_are_called_as_libcst_calls_them(visitor):
    module = cst.parse_module("f(a.b, g(c))\nx = y.z\n")
    ours, theirs = visitor(), visitor()
    visit_without_copying(module, ours)
    module.visit(theirs)
    assert ours.calls == theirs.calls and len(ours.calls) >= 2


def test_no_rule_needs_the_field_hooks_called():
    """The field hooks are skipped for them; a rule with a ``visit_Call_func`` would get them."""
    assert not any(_reacts_to_fields(rule) for rule in codemods.PIPELINE)
    assert _reacts_to_fields(_FieldHandlers) and _reacts_to_fields(_MatcherFieldHandlers)
    assert _reacts_to_fields(_Recorder) and not _reacts_to_fields(cst.CSTTransformer)


def test_a_rule_enters_only_the_nodes_that_can_hold_what_it_handles():
    class OnStatements(TpuCodemod):
        def leave_SimpleStatementLine(self, original_node, updated_node):
            return updated_node

        def visit_Assign(self, node):
            pass

    class OnNames(OnStatements):
        def leave_Name(self, original_node, updated_node):
            return updated_node

    class OnAField(OnStatements):
        def visit_Call_func(self, node):
            pass

    expressions = {cst.Call, cst.Name, cst.Attribute, cst.Lambda, cst.Subscript}
    assert expressions <= OnStatements._unentered
    assert not OnStatements._unentered & (ALWAYS_ENTERED | {cst.Assign, cst.IndentedBlock, cst.If})
    # a name's parentheses and whitespace hold no name; a call, a lambda or a subscript may
    assert {cst.LeftParen, cst.SimpleWhitespace, cst.Comma, cst.Integer} <= OnNames._unentered
    assert not OnNames._unentered & {cst.Name, cst.Call, cst.Lambda, cst.Subscript, cst.Arg}
    assert cst.Call not in OnAField._unentered and cst.Name in OnAField._unentered
    # a rule that handles whitespace enters everything that can hold it
    assert types_leading_nowhere(frozenset({cst.SimpleWhitespace})) == frozenset(
        t for t, below in _types_below().items() if cst.SimpleWhitespace not in below
    ) - {cst.SimpleWhitespace}


EVERY_KIND_OF_BLOCK = """\
import torch
if a:
    x = 1
elif b:
    x = 2
else:
    x = 3; y = 4
try:
    pass
except E:
    z = 1
else:
    z = 2
finally:
    z = 3
try:
    pass
except* E:
    w = 1
for i in r:
    f(i)
else:
    g()
while c:
    break
else:
    h()
with m() as n, o:
    del n
match p:
    case [1, q]:
        return q
    case _:
        pass
@decorate(lambda v: v)
class C(Base):
    def method(self): return [u for u in self]

    async def run(self):
        async for item in stream:
            async with lock:
                await item
if d: e = 1
"""


class _StatementRecorder(TpuCodemod):
    """A rule with statement handlers only, noting every node it leaves."""

    CODE, NAME, SUMMARY = "TPU199", "statement-recorder", "notes the nodes it leaves"

    def __init__(self, context) -> None:
        super().__init__(context)
        self.left: list[int] = []

    def leave_SimpleStatementLine(self, original_node, updated_node):
        return updated_node

    def on_leave(self, original_node, updated_node):
        self.left.append(id(original_node))
        return super().on_leave(original_node, updated_node)


@pytest.mark.parametrize(
    "source",
    [pytest.param(EVERY_KIND_OF_BLOCK, id="every kind of block")]
    + [pytest.param(p.read_text(encoding="utf-8"), id=p.name) for p in _acted_on_sources()[:6]],
)
def test_a_rule_on_statements_still_reaches_every_statement(source):
    module = cst.parse_module(source)
    recorder = _StatementRecorder(CodemodContext())
    assert cst.Assign in recorder._unentered
    recorder.transform_module_impl(module)
    statements = [id(node) for node in walk_all(module) if type(node) in ALWAYS_ENTERED]
    assert set(statements) <= set(recorder.left)
    # expressions were not entered
    assert len(recorder.left) < len(list(walk_all(module)))


EVERY_KIND_OF_EXPRESSION = """\
from m import *
from . import (a as b, c)
import x.y as z
global g
x: int = 1
x += 2; x @= y; x **= 2; x //= 3; x >>= 1; x <<= 1; x ^= 1; x |= 1; x &= 1; x %= 2; x -= 1
y = [a for a in b if a async for c in d] + {k: v for k, v in e} + {s for s in f} + (g for g in h)
z = lambda a, /, b=1, *c, d, e=2, **f: (yield a) if not b else (yield from c)
w = {**a, 'b': 1}, [*a, 1], (*a,), a[1:2:3, ...], a[::], f(*a, **b, c=1), -a, +a, ~a
v = a < b <= c > d >= e == f != g in h not in i is j is not k and l or m
u = a + b - c * d / e // f % g ** h @ i << j >> k & l | m ^ n
t = f"{a!r:>{width}} {b=}" "concatenated", rb'bytes', 1j, 1.5e3, 0x1f, None, True, ...
if (n := len(a)) > 1:
    del a[0], b.c
    assert a, "message"
    raise E from F
def f[T: int, *Ts, **P](a: T, *args: *Ts) -> T:
    nonlocal q
    async def g():
        await a
        return [x async for x in y]
    type Alias[K] = dict[K, int]
    return a if b else c
match point:
    case {"x": 0, **rest} | Point(x=0, y=_) as p if p:
        pass
    case [1, *others, None] | (True | -1 | 1 + 2j) | a.b:
        pass
"""


def _types_in_subtrees(module: cst.Module) -> list[tuple[type, set[type]]]:
    """Each node's type with the types of every node under it."""
    found: list[tuple[type, set[type]]] = []

    def under(node: cst.CSTNode) -> set[type]:
        types: set[type] = set()
        for child in children_of(node):
            types |= {type(child)} | under(child)
        found.append((type(node), types))
        return types

    under(module)
    return found


EVERY_KIND_AND_REAL_SOURCES = [
    pytest.param(EVERY_KIND_OF_BLOCK, id="every kind of block"),
    pytest.param(EVERY_KIND_OF_EXPRESSION, id="every kind of expression"),
] + _acted_on_params(lambda p: p.read_text(encoding="utf-8"))


@pytest.mark.parametrize("source", EVERY_KIND_AND_REAL_SOURCES)
def test_what_can_be_under_a_node_type_covers_real_trees(source):
    """What ``types_leading_nowhere`` stands on: a node's subtree holds only types its type's
    annotations admit (if libcst broke this, a rule would miss nodes it handles)."""
    below = _types_below()
    for node_type, types in _types_in_subtrees(cst.parse_module(source)):
        assert types <= below[node_type], (node_type.__name__, types - below[node_type])


@pytest.mark.parametrize("source", EVERY_KIND_AND_REAL_SOURCES)
def test_what_a_field_holds_is_what_its_annotation_admits(source):
    """What a walk stands on when it does not read a field whose annotation admits only types
    it does not enter (``_fields_to_walk``)."""
    for node in walk_pruned(cst.parse_module(source), ()):
        fields = visited_fields(node)
        admits = _field_admits(type(node))
        for name in fields.order if fields is not None else ():
            value = getattr(node, name)
            for child in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(child, cst.CSTNode):
                    assert type(child) in admits[name], (type(node).__name__, name)


def test_a_walk_that_passes_over_fields_rebuilds_nodes_as_libcst_does():
    """The whitespace fields of a call, a list and an assignment are not read by a walk that
    only enters names; the nodes rebuilt around its edits keep them."""
    module = cst.parse_module("f ( x , y = x )  # c\nz = [ x ]\n")
    unentered = types_leading_nowhere(frozenset({cst.Name}))
    assert _fields_to_walk(cst.Call, visited_fields(module.body[0].body[0].value), unentered) == (
        "func",
        "args",
    )
    ours = visit_without_copying(module, _Rename("x", "w"), unentered)
    assert ours.code == module.visit(_Rename("x", "w")).code
    assert ours.code == "f ( w , y = w )  # c\nz = [ w ]\n"


def test_the_concrete_types_of_a_node_class_are_its_subclasses():
    """``_field_admits`` reads subclassing off the MROs: libcst's abstract node classes (ABCMeta)
    must have no subclasses but the real ones."""
    concrete = _concrete_types_of()
    annotated = {
        held
        for node_type in _concrete_node_types()
        for annotation in typing.get_type_hints(node_type).values()
        for held in _node_classes_in(annotation)
    }
    exported = {c for c in vars(cst).values() if isinstance(c, type) and issubclass(c, cst.CSTNode)}
    assert cst.BaseExpression in annotated and cst.CSTNode in concrete
    for held in annotated | exported:
        expected = {c for c in _concrete_node_types() if issubclass(c, held)}
        assert concrete.get(held, frozenset()) == expected, held.__name__


def _handled_by_every_name(visitor_type: type) -> frozenset[type]:
    """``handled_node_types`` as it was: every name ``dir`` gives looked at."""
    handled = set()
    for name in dir(visitor_type):
        prefix, _, rest = name.partition("_")
        node_type = getattr(cst, rest.split("_")[0], None) if rest else None
        if prefix in ("visit", "leave") and isinstance(node_type, type):
            if issubclass(node_type, cst.CSTNode) and own_method(visitor_type, name) is not None:
                handled.add(node_type)
    return frozenset(handled)


def test_the_node_types_a_visitor_handles_are_read_from_its_own_names():
    class Both(cst.CSTVisitor, cst.CSTTransformer):
        def leave_Name(self, original_node, updated_node=None):
            pass

    visitors = [*codemods.PIPELINE, ScopeVisitor, ExpressionContextVisitor, metadata._ScopeVisitor]
    visitors.append(Both)
    visitors += [
        _FieldHandlers,
        _MatcherFieldHandlers,
        _Recorder,
        cst.CSTVisitor,
        m.MatcherDecoratableTransformer,
    ]
    for visitor_type in visitors:
        assert handled_node_types(visitor_type) == _handled_by_every_name(
            visitor_type
        ), visitor_type
    assert handled_node_types(Both) == {cst.Name}
    assert handled_node_types(cst.CSTTransformer) == frozenset()


def test_an_annotation_not_understood_may_hold_any_node():
    assert _node_classes_in(typing.Any) == _node_classes_in(object) == [cst.CSTNode]
    assert _node_classes_in(typing.Optional[cst.Name]) == [cst.Name]
    assert _node_classes_in(typing.Sequence[typing.Union[cst.Arg, str]]) == [cst.Arg]


def test_libcsts_concrete_node_classes_are_final():
    """Hot paths compare ``type(node) is cst.Call`` (migrate/fastcst/traversal.py)."""
    assert len(_types_below()) > 150
    for node_type in _types_below():
        assert not node_type.__subclasses__(), node_type.__name__


def test_walk_all_gives_every_node_but_layout_in_source_order():
    module = cst.parse_module(EVERY_KIND_OF_BLOCK + EVERY_KIND_OF_EXPRESSION)
    every = list(walk_pruned(module, ()))
    assert [n for n in every if type(n) not in LAYOUT] == list(walk_all(module))
    assert len(list(walk_all(module))) < len(every) * 2 // 3  # layout: over a third
