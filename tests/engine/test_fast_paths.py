"""The shortcuts the engine takes for speed give exactly what libcst would."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Sequence

import libcst as cst
import libcst.matchers as m
import pytest
from libcst._nodes.base import CSTCodegenError  # private: libcst does not export it
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import (
    ExpressionContextProvider,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    QualifiedNameProvider,
    ScopeProvider,
)
from libcst.metadata.expression_context_provider import ExpressionContextVisitor
from libcst.metadata.scope_provider import (
    Access,
    BaseAssignment,
    BuiltinScope,
    GlobalScope,
    Scope,
    ScopeVisitor,
)

from codemods._base import (
    MATCHER_ATTRIBUTES,
    TpuCodemod,
    _module_level_imports,
    children_of,
    walk_pruned,
)
from migrate.fastcst.codegen import StatementCode, module_code, node_code
from migrate.fastcst.traversal import LAYOUT, visit_without_copying
from codemods.testing import apply_rule, case_sources
from migrate import engine
from migrate.fastcst import imports, metadata
from migrate.engine import Selection, rules_that_may_act, run_pipeline
from migrate.fastcst.metadata import (
    Positions,
    SharedMetadata,
    _parents,
    _QualifiedNames,
    _visits_only_the_module,
    _wrapper_of,
)

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"  # (not REPO: the venv, torch included, may live in the checkout)


def _sample_sources() -> list[Path]:
    torch = pytest.importorskip("torch")
    torch_dir = Path(torch.__file__).parent
    picks = ["nn/modules/rnn.py", "_dynamo/utils.py", "optim/adam.py", "utils/data/dataloader.py"]
    fixtures = sorted(FIXTURES.glob("*/before/**/*.py"))[:8]
    return [torch_dir / p for p in picks if (torch_dir / p).exists()] + fixtures


def _sample_params(value, paths: Sequence[Path] | None = None) -> list:
    """``value(path)`` of each sample source (or of ``paths``); torch's own files (thousands of
    lines each) are left to the full suite (``slow``)."""
    return [
        pytest.param(
            value(path),
            id=path.name,
            marks=[] if path.is_relative_to(FIXTURES) else [pytest.mark.slow],
        )
        for path in (_sample_sources() if paths is None else paths)
    ]


@pytest.mark.parametrize("path", _sample_params(lambda p: p))
def test_children_and_parents_are_libcsts(path):
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    nodes = 0
    for node in walk_pruned(module, ()):  # every node
        expected = node.children
        got = children_of(node)
        assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected))
        nodes += 1
    parents = _parents(module)
    reference = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ParentNodeProvider)
    assert len(reference) == nodes - 1
    # layout nodes (whitespace, comments, line breaks) are left out
    code = {node: parent for node, parent in reference.items() if type(node) not in LAYOUT}
    assert parents is not None and len(parents) == len(code) < len(reference)
    assert all(parents[node] is parent for node, parent in code.items())


@pytest.mark.parametrize("path", _sample_params(lambda p: p))
def test_qualified_names_on_demand_are_libcsts(path):
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    reference = wrapper.resolve(QualifiedNameProvider)
    on_demand = _QualifiedNames(wrapper.resolve(ScopeProvider), wrapper.resolve(ParentNodeProvider))
    assert len(on_demand) == len(reference)
    for node in walk_pruned(module, ()):  # every node
        expected = reference[node]
        expected = expected() if callable(expected) else expected  # libcst's LazyValue
        assert on_demand[node] == expected
    with pytest.raises(KeyError):
        on_demand[cst.Name("outside")]


STRING_ANNOTATIONS = (
    "import torch\n\n\ndef f(x: 'torch.Tensor') -> 'Optional[torch.Tensor]':\n"
    "    y: 'torch.Tensor' = x\n    return y\n"
)
# libcst's scope visitor reads these three calls' string arguments as type hints; the engine's
# looks a call's names up only when they can be one of them (metadata.could_be_named)
TYPING_FORMS = """\
import typing
import typing as t
from typing import NewType as NT, TypeVar, cast as as_type
from torch import cuda as gpu
import torch.nn as tnn
import torch.cuda

UserId = NT("UserId", "int")
T = TypeVar("T", "Foo", bound="Bar")
U = t.TypeVar("U", "Baz")


def f(x):
    from typing import cast as late
    y = as_type("Foo", x)
    z = typing.cast("Bar", y)
    w = late("Baz", z)
    gpu.synchronize()
    torch.cuda.synchronize()
    return tnn.Linear(2, 2)(w), int.from_bytes(b"", "big"), print, (f)(x).cast(), x[0]()


class Foo: ...
class Bar: ...
class Baz: ...


class cuda:
    class streams:
        Stream = int
        default = Stream


def torch_like():
    device = 1
    return device
"""


def _sample_texts(paths: Sequence[Path] | None = None) -> list:
    """The text of each sample source (or of ``paths``), torch's own files marked ``slow``."""
    return _sample_params(lambda p: p.read_text(encoding="utf-8"), paths)


SCOPE_SOURCES = _sample_texts() + [
    pytest.param(STRING_ANNOTATIONS, id="string annotations"),
    pytest.param(TYPING_FORMS, id="typing special forms"),
]


@pytest.mark.parametrize("source", SCOPE_SOURCES)
def test_scopes_resolved_from_visit_module_are_libcsts(source):
    """The engine calls the scope and expression-context providers' ``visit_Module`` instead of
    libcst's walk over the whole tree: the same scopes and contexts for every node of the tree
    (string annotations are parsed anew each time, so their nodes are not compared)."""
    reference = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
    expected_scopes = reference.resolve(ScopeProvider)
    expected_contexts = reference.resolve(ExpressionContextProvider)
    shared = SharedMetadata(reference.module)
    scopes = shared.resolved(ScopeProvider)
    contexts = shared.resolved(ExpressionContextProvider)
    assert shared._wrapper._metadata[ScopeProvider] is scopes  # what libcst's visitors read
    every_node = list(walk_pruned(reference.module, ()))
    # whitespace, comments and line breaks are not given a scope (metadata._unentered_by)
    nodes = [n for n in every_node if type(n) not in LAYOUT]
    assert not [n for n in every_node if type(n) in LAYOUT and n in scopes]
    assert {n for n in nodes if n in scopes} == {n for n in nodes if n in expected_scopes}
    assert {n: contexts.get(n) for n in every_node} == {
        n: expected_contexts.get(n) for n in every_node
    }
    for node in nodes:
        got, expected = scopes.get(node), expected_scopes.get(node)
        assert type(got) is type(expected)
        if expected is None:
            continue
        assert getattr(got, "node", None) is getattr(expected, "node", None)
        if isinstance(node, (cst.Name, cst.Attribute)):
            assert got.get_qualified_names_for(node) == expected.get_qualified_names_for(node)
    described = {id(s): _described(s) for s in scopes.values() if s is not None}
    expected_described = {id(s): _described(s) for s in expected_scopes.values() if s is not None}
    assert sorted(described.values()) == sorted(expected_described.values())


@pytest.mark.parametrize("source", SCOPE_SOURCES)
def test_could_name_rules_out_no_qualified_name(source):
    """``could_name`` and ``could_be_under``, the shortcuts of ``TpuCodemod.is_name`` and
    ``may_be_under`` and of the scope visitor's calls, say no only when the node's qualified
    names hold none of the names asked: asked of each node with each of its own names (aliases,
    builtins, names in classes and functions among them), and with each name's first part,
    they say yes."""
    shared = SharedMetadata(cst.parse_module(source))
    names = shared.resolved(QualifiedNameProvider)
    asked = ruled_out = 0
    for node in walk_pruned(shared.module, ()):
        if type(node) in LAYOUT:
            continue
        for name in {q.name for q in names[node]}:
            assert names.could_name(node, [name]), (name, node)
            assert names.could_be_under(node, name.partition(".")[0]), (name, node)
            asked += 1
        ruled_out += not names.could_name(node, ["torch.cuda.synchronize", "typing.cast"])
        ruled_out += not names.could_be_under(node, "torch")
    assert asked and ruled_out  # it is asked, and it does rule nodes out


def _described(scope) -> tuple:
    """What rules read of a scope: its kind and node, each assignment (name, kind, node) and
    each access (name, node, annotation and type-hint flags, the nodes of its referents), by
    node identity."""

    def node_id(thing) -> int:
        return id(getattr(thing, "node", None))

    assignments = sorted(
        (a.name, type(a).__name__, node_id(a)) for a in scope.assignments
    )  # fmt: skip
    accesses = sorted(
        (a.node.value if isinstance(a.node, cst.Name) else "", id(a.node),
         a.is_annotation, a.is_type_hint, tuple(sorted(node_id(r) for r in a.referents)))
        for a in scope.accesses
    )  # fmt: skip
    return type(scope).__name__, node_id(scope), tuple(assignments), tuple(accesses)


def test_libcsts_walk_is_back_after_scopes_are_computed(monkeypatch):
    """Scopes are computed with ``CSTNode.visit`` routed to the non-copying walk for read-only
    visitors; afterwards, and when the computation fails, libcst's own walk is back."""
    libcst_visit = cst.CSTNode.visit
    routed = []
    real = metadata.visit_without_copying
    monkeypatch.setattr(
        metadata,
        "visit_without_copying",
        lambda node, v, *rest: routed.append(v) or real(node, v, *rest),
    )
    shared = SharedMetadata(cst.parse_module("import torch\ndef f(x):\n    return x.cuda()\n"))
    shared.resolved(ScopeProvider)
    assert routed and cst.CSTNode.visit is libcst_visit

    def fail(*args):
        raise RuntimeError("scope analysis failed")

    monkeypatch.setattr(ScopeVisitor, "infer_accesses", fail)
    with pytest.raises(RuntimeError):
        SharedMetadata(cst.parse_module("x = 1\n")).resolved(ScopeProvider)
    assert cst.CSTNode.visit is libcst_visit
    transformed = cst.parse_module("x = 1\n").visit(cst.CSTTransformer())  # libcst's copy
    assert transformed.code == "x = 1\n"


ODD_LAYOUTS = {
    "crlf": "x = 1\r\ny = (2,\r\n     3)\r\n",
    "cr": "a = 1\rb = [\r  2]\r",
    "tabs-formfeed-unicode": "if x:\n\tpass  # tab\n\x0c\ndef f(é='ü'):\n    return f'{é!r:>{w}}'\n",
    "empty": "",
    "no-final-newline": "@d\nclass C: x = 1; y = 2",
}
SAMPLES_AND_ODD_LAYOUTS = _sample_params(lambda p: p.read_text(encoding="utf-8")) + [
    pytest.param(text, id=name) for name, text in ODD_LAYOUTS.items()
]


@pytest.mark.parametrize("source", SAMPLES_AND_ODD_LAYOUTS)
def test_positions_are_libcsts(source):
    module = cst.parse_module(source)
    ours = SharedMetadata(module).resolved(PositionProvider)
    theirs = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert len(ours) == len(theirs)
    assert ours.code == module.code
    for node, expected in theirs.items():
        assert ours[node] == expected
    with pytest.raises(KeyError):
        ours[cst.Name("elsewhere")]


@pytest.mark.parametrize("source", SAMPLES_AND_ODD_LAYOUTS)
def test_code_generated_is_libcsts(source):
    module = cst.parse_module(source)
    assert module_code(module) == module.code
    alone = cst.Module([])
    for node in walk_pruned(module, ()):  # every node, as code of its own
        try:
            expected = alone.code_for_node(node)
        except CSTCodegenError:  # an annotation's on its own
            with pytest.raises(CSTCodegenError):
                node_code(node)
        else:
            assert node_code(node) == expected


class _RenameFirstName(cst.CSTTransformer):
    """Renames the first name of the module wherever it is: some statements are rebuilt."""

    def __init__(self) -> None:
        super().__init__()
        self.old: str | None = None

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        self.old = self.old or original_node.value
        return (
            updated_node.with_changes(value="renamed")
            if updated_node.value == self.old
            else updated_node
        )


class _DropEveryOtherStatement(cst.CSTTransformer):
    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return updated_node.with_changes(body=updated_node.body[::2])


@pytest.mark.parametrize("source", SAMPLES_AND_ODD_LAYOUTS)
def test_code_generated_from_statements_seen_before_is_libcsts(source):
    """One ``StatementCode`` over a run's trees, as in the pipeline: each tree's code is
    libcst's, and libcst's code generation is back after each."""
    statements = StatementCode()
    module = cst.parse_module(source)
    for edit in (None, _RenameFirstName(), _DropEveryOtherStatement(), _RenameFirstName()):
        if edit is not None:
            module = visit_without_copying(module, edit)
        assert module_code(module, statements) == module.code
        assert cst.SimpleStatementLine._codegen is cst.CSTNode._codegen


@pytest.mark.parametrize("source", SAMPLES_AND_ODD_LAYOUTS)
def test_positions_from_statements_seen_before_are_libcsts(source):
    """Positions of each tree of a run with one ``StatementCode``, plain code generated in
    between (as the pipeline does after each edit): libcst's, node for node."""
    statements = StatementCode()
    module = cst.parse_module(source)
    for edit in (None, _RenameFirstName(), _DropEveryOtherStatement(), _RenameFirstName()):
        if edit is not None:
            module = visit_without_copying(module, edit)
            module_code(module, statements)
        ours = Positions(module, statements)
        theirs = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        assert ours.code == module.code
        assert len(ours) == len(theirs)
        for node, expected in theirs.items():
            assert ours[node] == expected


def test_a_statement_seen_at_one_indentation_is_generated_again_at_another():
    statements = StatementCode()
    statement = cst.parse_statement("x = [\n    1,\n]  # one\n")
    at_top = cst.Module(body=[statement])
    nested = cst.parse_module("def f():\n    pass\n")
    nested = nested.with_changes(
        body=[nested.body[0].with_changes(body=cst.IndentedBlock(body=[statement]))]
    )
    with_tabs = nested.with_changes(default_indent="\t")
    for module in (at_top, nested, with_tabs, at_top):
        assert module_code(module, statements) == module.code
    # (continuation lines take the indentation of the block too)
    assert nested.code == "def f():\n    x = [\n        1,\n    ]  # one\n"
    assert with_tabs.code == "def f():\n\tx = [\n\t    1,\n\t]  # one\n"


ALL_CASES = [pytest.param(rule, source, id=ident) for rule, ident, source in case_sources()]


@pytest.mark.slow  # every case through the pipeline twice; test_plain_libcst's companion
@pytest.mark.parametrize("rule, source", ALL_CASES)
def test_engine_runs_each_rule_as_libcst_does(rule, source, monkeypatch):
    """The engine's shared, on-demand metadata and its own import step give what the rule gives
    run on its own by libcst's codemod machinery (the engine's layout of long new lines aside)."""
    monkeypatch.setattr(engine, "_laid_out", lambda original, new_text, filename: new_text)
    expected, expected_findings = apply_rule(rule, source)
    selection = Selection.from_options(select=[rule.CODE, *rule.FINDINGS])
    output, _, findings = run_pipeline(
        cst.parse_module(source), source, selection, "case.py", rules=[rule]
    )
    assert output == expected
    assert sorted(f.code for f in findings) == sorted(expected_findings)


ROOTS = ("torch", "torch_xla", "torch.nn", "transformers", "os", "numpy")


@pytest.mark.parametrize(
    "source",
    _sample_texts()
    + [
        "import os\n\n\nclass A:\n    import numpy\n\n\ndef f():\n    import transformers\n",
        "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\n",
        "from torch import nn as n\nfrom . import numpy\nfrom os import *\n",
        "def f():\n    global numpy\n    import numpy\n",
        "import os\n\n\ndef f():\n    global counter\n    import numpy\n    counter = 1\n",
        "if True:\n    from torch_xla import runtime\nf = lambda: 1\n",
    ],
    ids=lambda s: repr(s[:30]),
)
def test_module_level_imports_are_what_the_module_scope_binds(source):
    module = cst.parse_module(source)
    scope = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)[module]
    bound = {
        qname.name
        for assignment in scope.assignments
        if isinstance(getattr(assignment, "node", None), (cst.Import, cst.ImportFrom))
        for qname in assignment.get_qualified_names_for(assignment.name)
    }
    names = _module_level_imports(module)
    if names is False:  # a global name an import binds: the rule asks libcst's scope instead
        assert "global numpy" in source
        return
    for root in ROOTS:
        expected = any(name == root or name.startswith(root + ".") for name in bound)
        assert any(name == root or name.startswith(root + ".") for name in names) == expected


HEADS = [
    "",
    "x = 1\n",
    '"""doc"""\n',
    '"""doc"""\nimport os\n\nx = 1\n',
    "import os\nfrom typing import List\n# note\nx = 1\n",
    "__strict__ = True\nimport torch\n",
    "import torch\nimport torch_xla.core.xla_model as xm\n",
    "from __future__ import annotations\n\nimport torch\nfrom torch_xla import runtime\n"
    "try:\n    import numpy\nexcept ImportError:\n    numpy = None\n",
    "x = 1\nimport torch\n",
    "import os, sys\nimport torch\n\n\ndef f():\n    import torch_xla\n",
    # compound statements in the head: the visitor sees only the lines above them
    "import torch\n# the model\nclass M:\n    from torch_xla import runtime\n",
    "import torch\n\n# the model\n\n@dataclass\nclass M:\n    import os\n",
    "import torch\n@torch.no_grad()\ndef f():\n    import torch_xla.core.xla_model as xm\n",
    "class M:\n    import torch\nimport torch_xla\n",
    '"""doc"""\nif TYPE_CHECKING:\n    import torch_xla\nimport os\n',
    '"""doc"""\n\nimport os\ntry:\n    import torch_xla\nexcept ImportError:\n    pass\n',
]
WANTED = [
    [("torch_xla", None, None)],
    [("torch_xla.core.xla_model", None, "xm"), ("torch_xla", None, None)],
    [("torch_xla", "runtime", None), ("__future__", "annotations", None)],
    [("torch_xla.distributed.parallel_loader", "MpDeviceLoader", None), ("os", None, None)],
]


@pytest.mark.parametrize("wanted", WANTED, ids=str)
@pytest.mark.parametrize(
    "source",
    HEADS + _sample_texts(_sample_sources()[:3]),
    ids=lambda s: repr(s[:30]),
)
def test_imports_added_on_the_head_are_libcsts(source, wanted):
    module = cst.parse_module(source)
    for_libcst, for_engine = _two_contexts(AddImportsVisitor.add_needed_import, wanted)
    expected = module.visit(AddImportsVisitor(for_libcst)).code
    with imports.visitors_set_up_faster():  # as the engine runs it
        assert imports.with_imports_added(module, for_engine).code == expected


def _two_contexts(request, requests) -> list[CodemodContext]:
    """Two contexts holding the same import ``requests``: libcst's visitor and the engine's
    shortcut each consume one."""
    contexts = []
    for _ in range(2):
        context = CodemodContext(filename="t.py")
        for args in requests:
            request(context, *args)
        contexts.append(context)
    return contexts


XM = ("torch_xla.core.xla_model", None, "xm")
# (source, imports asked to be removed, whether the text tells, for each name they bind, that it
# is unused (it appears only in top-level import statements) or used (each scope importing it
# reads it after its first import there), so that the remover need not analyse the whole module)
REMOVALS = [
    ("import torch_xla.core.xla_model as xm\nimport torch\n\ntorch.ones(2)\n", [XM], True),
    (
        "import os\nimport torch_xla.core.xla_model as xm, torch_xla  # keep\n\ntorch_xla.sync()\n",
        [XM],
        True,
    ),
    ("import torch_xla.core.xla_model as xm\nimport torch_xla.core.xla_model as xm\n", [XM], True),
    ("import torch\nimport torch.cuda\n\nx = 1\n", [("torch.cuda", None, None)], True),
    ("import torch\nimport torch.cuda\n\nx = torch.ones(1)\n", [("torch.cuda", None, None)], True),
    ("x = torch.ones(1)\nimport torch.cuda\n", [("torch.cuda", None, None)], False),
    ("import torch\n\n\ndef f():\n    return torch.ones(1)\n", [("torch", None, None)], True),
    ("import torch\n\nx: torch.Tensor\n", [("torch", None, None)], False),
    (
        "import torch, torch_xla.core.xla_model as xm\n\nx = torch.ones(1)\n",
        [("torch", None, None), XM],
        True,
    ),
    (
        "from torch.cuda.amp import (\n    GradScaler,  # scaler\n    autocast,\n)\n\n"
        "with autocast():\n    pass\n",
        [("torch.cuda.amp", "GradScaler", None)],
        True,
    ),
    ("from torch.cuda import amp as a\nimport os\n", [("torch.cuda", "amp", "a")], True),
    ("import torch_xla.core.xla_model as xm; print(1)\n", [XM], True),
    ("import torch_xla.core.xla_model as xm; print(xm)\n", [XM], False),
    ("import torch_xla.core.xla_model as xm\n\n__all__ = ['xm']\n", [XM], False),
    ("import torch_xla.core.xla_model as xm\n\n# xm is gone\n", [XM], True),
    ("import torch_xla.core.xla_model as xm\n\n\ndef f(xm):\n    return xm\n", [XM], False),
    ("def f():\n    import torch_xla.core.xla_model as xm\n", [XM], False),
    (
        "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    pass\n",
        [XM],
        False,
    ),
    ("import torch_xla.core.xla_model as xm\nimport os\n", [XM, ("os", None, None)], True),
    ("import torch_xla.core.xla_model as xm\nxm.sync()\n", [XM, XM], True),  # asked twice
    ("import torch_xla.core.xla_model as xm\nimport os\nos.sep\n", [XM, ("os", None, None)], True),
    ("import torch_xla.core.xla_model as xm\nimport os\nos.sep\nxm.sync\n", [XM], True),
    ("import torch_xla.core.xla_model as xm\n\n\ndef f():\n    xm.sync()\n", [XM], True),
    ('"""Docs."""\n# header\n\nimport torch_xla.core.xla_model as xm\n\n\nx = 1\n', [XM], True),
    ("from . import xm\nimport torch_xla.core.xla_model as xm\n", [XM], True),
    # imports inside blocks and functions: each scope that imports the name must read it after
    (
        "try:\n    import torch\nexcept ImportError:\n    pass\nx = torch\n",
        [("torch", None, None)],
        True,
    ),
    ("if X:\n    import torch\nx = torch\n", [("torch", None, None)], True),
    (
        "import torch\n\n\ndef f():\n    import torch.cuda\n\n    return torch.cuda\n\n\nx = torch\n",
        [("torch", None, None), ("torch.cuda", None, None)],
        True,
    ),
    (
        "def f():\n    import torch.cuda\n\n    return torch.cuda\n",
        [("torch.cuda", None, None)],
        True,
    ),
    (
        "def f():\n    import torch.cuda\n\n    return 1\n\n\nx = torch\n",
        [("torch.cuda", None, None)],
        False,
    ),
    (
        "def f():\n    import torch.cuda\n\n    def g():\n        return torch\n",
        [("torch", None, None)],
        False,
    ),
    ("def f():\n    x = torch\n    import torch\n", [("torch", None, None)], False),
    ("def f():\n    import torch\n    y: torch.Tensor\n", [("torch", None, None)], False),
    (
        "def f():\n    import torch\n    return [torch for _ in ()]\n",
        [("torch", None, None)],
        False,
    ),
    (
        "def f():\n    import torch\n\n    @torch.jit\n    def g():\n        pass\n",
        [("torch", None, None)],
        True,
    ),
    ("@torch.jit\ndef f():\n    pass\n\n\nimport torch\n", [("torch", None, None)], False),
    (
        "def f():\n    @torch.jit\n    def g():\n        import torch\n",
        [("torch", None, None)],
        False,
    ),
    (
        "def f():\n    global torch\n    import torch\n    return torch\n",
        [("torch", None, None)],
        True,
    ),
    ("class A:\n    import torch\n\n    t = torch\n", [("torch", None, None)], True),
    (
        "class A:\n    import torch\n\n    def f(self):\n        return torch\n",
        [("torch", None, None)],
        False,
    ),
    (
        "import torch\nx = torch\n\n\nclass A:\n    def f(self):\n        from torch import cuda as torch\n",
        [("torch", None, None), ("torch", "cuda", "torch")],
        False,
    ),
    (
        "import torch\nmatch x:\n    case torch.int8:\n        pass\n",
        [("torch", None, None)],
        False,
    ),
    # bound only by module-level imports, read from a nested scope: in any order
    ("def f():\n    return torch\n\n\nimport torch\n", [("torch", None, None)], True),
    (
        "try:\n    import torch\nexcept ImportError:\n    pass\nf = lambda: torch\n",
        [("torch", None, None)],
        True,
    ),
    ("import torch\n\n\nclass A:\n    t = torch\n", [("torch", None, None)], True),
    ("import torch\n\nx = [torch for _ in ()]\n", [("torch", None, None)], True),
    ("import torch\n\nx = [1 for _ in torch]\n", [("torch", None, None)], False),
    ("import torch\n\n\n@torch.jit\ndef f():\n    pass\n", [("torch", None, None)], True),
    (
        "import torch\n\n\nclass A:\n    @torch.no_grad()\n    def f(self):\n        pass\n",
        [("torch", None, None)],
        True,
    ),
    ("import torch\n\n\n@torch.jit\nclass A:\n    pass\n", [("torch", None, None)], True),
    ("import torch\n\n\ndef f(torch=torch):\n    pass\n", [("torch", None, None)], False),
    ("import torch\n\n\ndef f(torch):\n    return torch\n", [("torch", None, None)], False),
    (
        "import torch\n\n\ndef f():\n    torch = 1\n    return torch\n",
        [("torch", None, None)],
        False,
    ),
    (
        "import torch\n\n\ndef f():\n    global torch\n    return torch\n",
        [("torch", None, None)],
        False,
    ),
    ("import torch\n\n\nclass torch:\n    x = torch\n", [("torch", None, None)], False),
    (
        "import torch\n\n\ndef f():\n    return [1 for torch in ()]\n",
        [("torch", None, None)],
        False,
    ),
    ("import torch\ndel torch\n\n\ndef f():\n    return torch\n", [("torch", None, None)], False),
    ("from a import torch\n\n\ndef f():\n    return torch\n", [("a", "torch", None)], True),
    # elsewhere only as words that are no use of the name: unused
    (
        "from torch.cuda.amp import autocast, GradScaler\nimport torch\n\n"
        "with torch.autocast('xla'):  # autocast\n    x = GradScaler()\n",
        [("torch.cuda.amp", "autocast", None)],
        True,
    ),
    ("from m import T\nf(T=1)\n", [("m", "T", None)], True),
    ("from m import T\nfrom T import y\n", [("m", "T", None)], True),
    ("from m import T\nfrom n import T as U\n", [("m", "T", None)], True),
    ("from m import T\n\n\ndef f(*, T):\n    pass\n", [("m", "T", None)], False),
    ("from m import T\n\nx: 'T' = 1\n", [("m", "T", None)], False),
    ("from m import T\n\n\ndef f(T):\n    return f'{T}'\n", [("m", "T", None)], False),
    ("from m import T\n\n\ndef f():\n    from m import T\n", [("m", "T", None)], False),
    ("from m import T\nif X:\n    from n import T\n", [("m", "T", None)], False),
    ("from m import T\n\n\nclass A(T.B):\n    pass\n", [("m", "T", None)], False),
    (
        "from torch import cuda as t\n\n\ndef f():\n    return torch\n",
        [("torch", "cuda", "t")],
        True,
    ),
]


@pytest.mark.parametrize("source, requests, decided", REMOVALS, ids=lambda v: repr(v)[:40])
def test_imports_removed_as_the_text_decides_are_libcsts(source, requests, decided):
    module = cst.parse_module(source)
    for_libcst, for_engine = _two_contexts(RemoveImportsVisitor.remove_unused_import, requests)
    expected = RemoveImportsVisitor(for_libcst).transform_module(module).code
    with imports.visitors_set_up_faster():  # as the engine runs it
        removed = imports.with_imports_removed(module, for_engine)
        assert (removed is not None) == decided
        if removed is None:  # the engine's fallback: libcst's visitor, helpers not copying
            _, for_fallback = _two_contexts(RemoveImportsVisitor.remove_unused_import, requests)
            shared = SharedMetadata(module)
            removed = shared.transform(RemoveImportsVisitor(for_fallback), on_demand=False)
    assert removed.code == expected


class _Decorated(m.MatcherDecoratableVisitor):
    """A matcher-decorated visitor: counts names inside calls."""

    def __init__(self) -> None:
        super().__init__()
        self.names = 0

    @m.call_if_inside(m.Call())
    @m.visit(m.Name())
    def count(self, node: cst.Name) -> None:
        self.names += 1


class _DecoratedByItsBase(_Decorated):
    """Decorated through the class it derives from."""


def test_visitors_set_up_faster_only_skips_searches_that_find_nothing():
    """Visitors are set up as libcst does, decorated ones too (their decorated methods
    inherited or not), and libcst's own set-up is back afterwards; the three private functions
    are still there to be stood in for."""
    from libcst.matchers import _visitors as matcher_visitors

    originals = [getattr(matcher_visitors, name) for name in imports._GATHERERS]
    module = cst.parse_module("f(a, b)\nc\n")
    with imports.visitors_set_up_faster():
        for _ in range(2):  # the second time with each class's functions already looked at
            for visitor_class in (_Decorated, _DecoratedByItsBase):
                decorated = visitor_class()
                module.visit(decorated)
                assert decorated.names == 3  # f, a and b, not c
            plain = AddImportsVisitor(CodemodContext())
            assert plain._extra_visit_funcs == {} and plain._matchers == {}
    assert [getattr(matcher_visitors, name) for name in imports._GATHERERS] == originals


def test_the_libcst_internals_relied_on_are_there():
    """Private details of libcst (pyproject allows libcst>=1.4,<2): the parent map the engine
    computes is the one libcst's wrapper hands out, the scope visitor's stacks are where the
    engine's visitor finds them, an assignment's accesses are where ``_empty_scopes`` finds
    them, and a matcher decorator sets one of the attributes
    ``TpuCodemod`` refuses."""
    module = cst.parse_module("import torch\nx = torch.ones(2)\n")
    wrapper = _wrapper_of(module)
    assert wrapper.resolve(ParentNodeProvider) is wrapper._metadata[ParentNodeProvider]
    assert wrapper.resolve(ParentNodeProvider)[module.body[0]] is module
    assert isinstance(wrapper._metadata[ParentNodeProvider], dict)  # ours, not recomputed
    shared = SharedMetadata(module)
    assert shared.resolved(ParentNodeProvider) is shared._wrapper._metadata[ParentNodeProvider]
    assert _visits_only_the_module(ScopeProvider)  # else libcst's slower walk is taken
    assert _visits_only_the_module(ExpressionContextProvider)
    stacks = ScopeVisitor(ScopeProvider())  # what metadata._ScopeVisitor.visit_Call appends to
    assert stacks._ScopeVisitor__top_level_attribute_stack == [None]
    assert stacks._ScopeVisitor__in_type_hint_stack == [False]
    scopes = SharedMetadata(module).resolved(ScopeProvider)  # what _empty_scopes empties
    torch = scopes[module]["torch"].pop()
    assert torch._BaseAssignment__accesses == set(torch.references)

    @m.visit(m.Name())
    def on_name(self, node):
        pass

    assert any(hasattr(on_name, attr) for attr in MATCHER_ATTRIBUTES)


def test_a_node_held_twice_is_noticed():
    name = cst.Name("x")
    module = cst.Module(body=[cst.SimpleStatementLine([cst.Expr(name)])] * 2)
    assert _parents(module) is None


def test_a_node_held_twice_gets_a_copy_for_each_place_after_the_first():
    kept = cst.parse_module("import torch\n").body[0]
    equal = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
    call = cst.Call(
        cst.Attribute(cst.Name("a"), cst.Name("f")),  # libcst's default Dot(), shared
        [cst.Arg(cst.Name("y"), keyword=cst.Name("k"), equal=equal)],
    )
    again = cst.SimpleStatementLine([cst.Expr(call)])
    module = cst.Module(body=[kept, again, again, cst.SimpleStatementLine([cst.Expr(call)])])
    shared = SharedMetadata(module)
    parents = shared.resolved(ParentNodeProvider)
    unshared = shared.module
    assert unshared.code == module.code
    assert unshared.body[0] is kept and unshared.body[1] is again  # the first place keeps it
    assert unshared.body[2] is not again and unshared.body[2].deep_equals(again)
    nodes = list(walk_pruned(unshared, LAYOUT))[1:]
    assert len(set(nodes)) == len(nodes) == len(parents)  # each node once, each with its parent
    assert all(node in children_of(parents[node]) for node in nodes)
    assert isinstance(shared._wrapper._metadata[ParentNodeProvider], dict)  # ours: no deep copy


def test_a_rule_cannot_use_matcher_decorators():
    with pytest.raises(TypeError, match="matcher decorators"):

        class Decorated(TpuCodemod):  # noqa: F841
            @m.visit(m.Name())
            def on_name(self, node: cst.Name) -> None:
                pass


def test_files_no_rule_acts_on_are_not_parsed():
    selection = Selection.from_options()
    library = (
        "import torch\n\n"
        "def cache(table, key, value):\n"
        "    table[key] = value  # an indexed write, no mask\n"
        '    """mentions cuda, .backward() and torch.save in prose only"""\n'
    )
    assert rules_that_may_act(library, selection) == []
    loaders_called_not_iterated = (
        "import torch\n\n"
        "def lower(x):\n"
        "    x_loader = x.make_loader()\n"
        "    return [x_loader(i) for i in range(4)]\n"
    )
    assert rules_that_may_act(loaders_called_not_iterated, selection) == []
    weights_set_not_tied = (
        "import torch\n\n"
        "def init(layer, w):\n"
        "    layer.weight = torch.nn.Parameter(w)\n"
        "    layer.bias = None\n"
    )
    assert rules_that_may_act(weights_set_not_tied, selection) == []
    masked = "import torch\n\ndef clip(x):\n    x[x < 0] = 0\n    return x\n"
    assert [rule.CODE for rule in rules_that_may_act(masked, selection)] == ["TPU116"]


def test_read_only_visitors_skip_only_nodes_they_cannot_need():
    """What ``CSTNode.visit`` leaves out while metadata is computed (``_unentered_by``)."""
    assert metadata._unentered_by(metadata._ScopeVisitor) == LAYOUT
    assert metadata._unentered_by(ScopeVisitor) == frozenset()  # libcst's own: its on_leave
    contexts = metadata._unentered_by(ExpressionContextVisitor)
    assert {cst.SimpleWhitespace, cst.Comma, cst.Integer} <= contexts
    assert not contexts & {cst.Name, cst.Attribute, cst.Call, cst.Lambda, cst.Assign}

    class SeesEveryNode(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            return True

    assert metadata._unentered_by(SeesEveryNode) == frozenset()


@pytest.mark.parametrize(
    "sources",
    [
        pytest.param(
            [p.read_text(encoding="utf-8") for p in _sample_sources() if p.is_relative_to(FIXTURES)],
            id="fixtures",
        ),
        pytest.param(
            [p.read_text(encoding="utf-8") for p in _sample_sources()],
            id="fixtures and torch",
            marks=[pytest.mark.slow],
        ),
    ],
)
def test_a_run_leaves_no_tree_to_the_cycle_collector(sources):
    """The trees a run made, their metadata and what the rules that walked them kept are freed
    when the run ends (``SharedMetadata.release``, each rule's attributes dropped after its
    pass): the cycle collector finds none of them. Only the two scopes around each tree's,
    emptied, wait for it (libcst's module and builtin scopes refer to each other)."""
    selection = Selection.from_options()
    gc.collect()
    gc.disable()
    try:
        for source in sources:
            run_pipeline(cst.parse_module(source), source, selection)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not [thing for thing in left if isinstance(thing, (cst.CSTNode, Access, BaseAssignment))]
    # a rule's visitor class made in a method may still refer to the rule: emptied
    assert not [thing for thing in left if isinstance(thing, TpuCodemod) and vars(thing)]
    scopes = [thing for thing in left if isinstance(thing, Scope)]
    assert {type(scope) for scope in scopes} <= {GlobalScope, BuiltinScope}
    assert not [scope for scope in scopes if scope._assignments or scope._accesses_by_name]
