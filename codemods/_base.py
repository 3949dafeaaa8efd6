"""What every tpu-migrate rule shares: identity, documentation, cases, findings, markers, imports.

A rule is a libcst ``VisitorBasedCodemodCommand``, so ``python -m libcst.tool codemod
codemods.tpu101_device_placement.DevicePlacement FILE`` runs it on its own (imports are then fixed
by libcst after the rule). Inside the tpu-migrate engine the rules of a pipeline share one
``CodemodContext``; the engine runs each rule without libcst's import step and fixes imports once
at the end.
"""

from __future__ import annotations

import enum
import functools
import re
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar, Collection, Iterable, Iterator, Sequence

import libcst as cst
from libcst.codemod import Codemod, CodemodContext, VisitorBasedCodemodCommand
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import (
    ParentNodeProvider,
    PositionProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from migrate.fastcst import plain_libcst
from migrate.fastcst.codegen import node_code
from migrate.fastcst.matchers import MATCHER_ATTRIBUTES
from migrate.fastcst.facts import FileFacts
from migrate.fastcst.traversal import (
    LAYOUT,
    children_of,
    children_reader,
    handled_node_types,
    own_method,
    types_leading_nowhere,
    visit_without_copying,
)

from . import _aliases as aliases

MARKER_PREFIX = "# TODO(tpu-migrate):"
FINDINGS_KEY = "tpu_migrate.findings"
REWRITES_KEY = "tpu_migrate.rewrites"
DISABLED_FINDINGS_KEY = "tpu_migrate.disabled_findings"
OPTIONS_KEY = "tpu_migrate.rule_options"  # rule code -> {option name: value} from the user's config
ADJUSTMENTS_KEY = "tpu_migrate.verify_adjustments"  # VerifyAdjustments the rules recorded
# (line in the rule's input, code as written; "" for a bare ignore) of each suppression that hid
# something, and whether the file has any suppression comment at all (set by the engine).
USED_SUPPRESSIONS_KEY = "tpu_migrate.used_suppressions"
HAS_SUPPRESSIONS_KEY = "tpu_migrate.has_suppressions"
# Set by a rule that found the file must not move to XLA (why, for the record): the rules after
# it leave the file alone (``TpuCodemod.keep_file_off_xla``).
OFF_XLA_KEY = "tpu_migrate.file_stays_off_xla"

# ``# tpu-migrate: ignore`` (every code) or ``# tpu-migrate: ignore[TPU201, TPU1]`` (prefixes; the
# code of a rule that was split names its parts too).
SUPPRESSION_PATTERN = re.compile(r"#.*?\btpu-migrate:\s*ignore\b(?:\[([^\]]*)\])?", re.IGNORECASE)
STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


def _node_types(*bases: type) -> frozenset[type]:
    return frozenset(
        c for c in vars(cst).values() if isinstance(c, type) and issubclass(c, bases)
    )  # fmt: skip


# What every rule's walk enters, whatever its handlers: the module, and the statements its
# suppressions and TODO markers are on.
ALWAYS_ENTERED = _node_types(cst.Module, *STATEMENTS)


class Safety(str, enum.Enum):
    """How much a reviewer must look at a rule's edits (ruff's fix applicability, one step finer)."""

    SAFE = "safe"  # same behaviour on TPU, only the spelling changes
    SEMANTIC = "semantic"  # changes how the program runs; prove it with `tpu-migrate verify`
    MANUAL = "manual"  # no rewrite: a finding and an inline TODO for a human


@dataclass(frozen=True)
class ImportSpec:
    """An import a rewrite needs, in the spelling a person would write."""

    module: str
    obj: str | None = None
    asname: str | None = None


# The aliases every torch_xla example uses; rules refer to them by these names.
TORCH_XLA = ImportSpec("torch_xla")
XM = ImportSpec("torch_xla.core.xla_model", asname="xm")
PL = ImportSpec("torch_xla.distributed.parallel_loader", asname="pl")
XR = ImportSpec("torch_xla.runtime", asname="xr")


@dataclass(frozen=True)
class Finding:
    """Something a human has to decide; rendered as an inline marker and in reports."""

    code: str
    line: int
    column: int  # 1-based, like the editors and ruff
    message: str

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "line": self.line,
            "column": self.column,
            "message": self.message,
        }


@dataclass(frozen=True)
class Suppression:
    """A ``# tpu-migrate: ignore[...]`` comment: its line and the codes or prefixes it names
    (none: every code)."""

    line: int
    codes: tuple[str, ...] = ()

    def token_for(self, code: str) -> str | None:
        """The code as written that suppresses ``code`` here ("" for a bare ignore), else None;
        the code of a rule that was split suppresses each of its parts (``_aliases.py``)."""
        if not self.codes:
            return ""
        return next((token for token in self.codes if aliases.names(token, code)), None)


def parse_suppression(comment: str) -> tuple[str, ...] | None:
    """The codes a suppression comment names (() for every code); None if it is not one."""
    match = SUPPRESSION_PATTERN.match(comment)
    if match is None:
        return None
    listed = match.group(1) or ""
    return tuple(dict.fromkeys(code.strip().upper() for code in listed.split(",") if code.strip()))


@dataclass
class _SuppressedStatement:
    """What a rule had recorded when it entered a statement whose suppression names it, so that
    leaving the statement unchanged also takes back the rewrites and findings made inside."""

    suppression: Suppression
    token: str
    rewrites: int
    findings: int
    adjustments: int
    imports: int
    refused: int


@dataclass(frozen=True)
class VerifyAdjustment:
    """A change of behaviour a rule made on purpose that `tpu-migrate verify` repeats in the
    original run, so both runs stay comparable (``kind`` names what the bootstrap does, e.g.
    ``drop_last``: the call on lines ``line``..``end_line`` gets ``drop_last=True``)."""

    code: str
    kind: str
    line: int
    end_line: int

    def to_dict(self) -> dict:
        return {"code": self.code, "kind": self.kind, "line": self.line, "end_line": self.end_line}


@dataclass(frozen=True)
class FindingDoc:
    """What ``tpu-migrate explain TPU2xx`` shows: the one-line summary, why it hurts on a TPU and
    what to do about it. ``str()`` is the summary, so a rule may also give a bare string."""

    summary: str
    why: str = ""
    what_to_do: str = ""

    def __str__(self) -> str:
        return self.summary

    def full_text(self) -> str:
        parts = [self.summary]
        if self.why:
            parts += [
                "",
                "Why it hurts on a TPU",
                textwrap.indent(textwrap.fill(self.why, 92), "    "),
            ]
        if self.what_to_do:
            parts += ["", "What to do", textwrap.indent(textwrap.fill(self.what_to_do, 92), "    ")]
        return "\n".join(parts)


@dataclass(frozen=True)
class Valid:
    """A case the rule must leave byte-identical and report nothing on."""

    source: str
    why: str = ""


@dataclass(frozen=True)
class Invalid:
    """A before/after pair; ``findings`` lists the codes the rule must report on ``before``."""

    before: str
    after: str
    findings: Sequence[str] = field(default_factory=tuple)
    why: str = ""


class TpuCodemod(VisitorBasedCodemodCommand):
    """Base class of every rule. Subclasses set the class attributes below and write visitors."""

    CODE: ClassVar[str]
    NAME: ClassVar[str]
    SUMMARY: ClassVar[str]
    SAFETY: ClassVar[Safety]
    # Finding codes (TPU2xx) this rule can report, with a one-line summary each.
    FINDINGS: ClassVar[dict[str, "str | FindingDoc"]] = {}
    # How the rule changes numerics on purpose, if it does; `tpu-migrate verify` shows it.
    NUMERICS: ClassVar[str] = ""
    # The rule is skipped on a file whose text contains none of these substrings.
    TRIGGERS: ClassVar[tuple[str, ...]] = ("torch",)
    # Options a user may set per rule (``[tool.tpu-migrate.options.TPU1xx]``), with their defaults.
    OPTIONS: ClassVar[dict[str, object]] = {}
    VALID: ClassVar[Sequence[Valid]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()

    METADATA_DEPENDENCIES = (
        PositionProvider,
        ParentNodeProvider,
        ScopeProvider,
        QualifiedNameProvider,
    )

    # (prefix, node type) -> the rule's own visitor method, None when it has none
    _handlers: ClassVar[dict[tuple[str, type], object]] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._handlers = {}
        _refuse_matcher_decorators(cls)
        # The node types the rule's walk does not enter: those holding nothing it handles.
        cls._unentered = _UNENTERED_WHEN_FIRST_WALKED

    def __init__(self, context: CodemodContext) -> None:
        # Rules do not use libcst's matcher decorators (refused above), so the matcher machinery
        # of VisitorBasedCodemodCommand is skipped: building it inspects the class on every
        # instantiation, and consulting it on every node made a rule's pass about 8x slower
        # (measured on torch/nn/modules/rnn.py: 1.1 s -> 0.13 s).
        Codemod.__init__(self, context)
        cst.CSTTransformer.__init__(self)
        self._extra_visit_funcs, self._extra_leave_funcs = {}, {}
        self.DESCRIPTION = self.SUMMARY  # what `python -m libcst.tool list` shows
        self._markers: dict[int, list[str]] = {}
        self._suppressions_possible = False
        self._suppressed: dict[int, _SuppressedStatement] = {}  # id(original statement) ->
        self._refused_edits = 0  # statement edits refused because of a suppression
        self._rewrites_owed = 0  # ... outside a suppressed statement: their rewrites to take back
        self._rewrites_at_start = 0
        self._imports_at_start = 0
        self._module_imports: list[str] | bool | None = None  # see ``imports_module``

    def transform_module(self, tree: cst.Module) -> cst.Module:
        # The stand-alone path (libcst's CLI, the rule's own cases): libcst fixes imports.
        return tidy_torch_xla_imports(super().transform_module(tree))

    # ----------------------------------------------------------------- documentation
    @classmethod
    def documentation(cls) -> str:
        return textwrap.dedent(cls.__doc__ or "").strip()

    def option(self, name: str):
        """The user's value for one of this rule's ``OPTIONS``, else its default."""
        if name not in self.OPTIONS:
            raise KeyError(f"{self.CODE} has no option {name!r}")
        configured = self.context.scratch.get(OPTIONS_KEY, {}).get(self.CODE, {})
        return configured.get(name, self.OPTIONS[name])

    @classmethod
    def finding_doc(cls, code: str) -> FindingDoc:
        doc = cls.FINDINGS[code]
        return doc if isinstance(doc, FindingDoc) else FindingDoc(str(doc))

    @classmethod
    def is_triggered_by(cls, text: str) -> bool:
        return any(trigger in text for trigger in cls.TRIGGERS)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        """False only when the rule certainly leaves the file alone, judged from what its code
        mentions (Python's parser, no libcst); asked after ``is_triggered_by``. Rules narrow it
        so that the engine parses fewer files; every INVALID case must keep it True."""
        return True

    # ----------------------------------------------------------------- names
    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        try:
            return {q.name for q in self.get_metadata(QualifiedNameProvider, node, set())}
        except KeyError:  # a node built by an earlier visitor in this pass has no metadata
            return set()

    def is_name(self, node: cst.CSTNode, *names: str) -> bool:
        """True when ``node`` refers to one of the fully qualified ``names`` (imports resolved)."""
        could_name = getattr(self.metadata.get(QualifiedNameProvider), "could_name", None)
        if could_name is not None and not could_name(node, names):
            return False  # the engine's metadata can tell without a scope lookup
        return not self.qualified_names(node).isdisjoint(names)

    def may_be_under(self, node: cst.CSTNode, root: str) -> bool:
        """False only when no qualified name of ``node`` starts with the name ``root``
        (``torch``), as the engine's metadata can tell without a scope lookup."""
        could_be_under = getattr(self.metadata.get(QualifiedNameProvider), "could_be_under", None)
        return could_be_under is None or could_be_under(node, root)

    def imports_module(self, root: str) -> bool:
        """True when the module imports ``root`` or one of its submodules under any spelling,
        at module level (what the module scope binds)."""
        if self._module_imports is None:
            self._module_imports = _module_level_imports(self.context.module)
        if self._module_imports is False:
            return self._module_scope_imports(root)
        return any(name == root or name.startswith(root + ".") for name in self._module_imports)

    def _module_scope_imports(self, root: str) -> bool:
        scope = self._module_scope()
        if scope is None:
            return False
        for assignment in scope.assignments:
            node = getattr(assignment, "node", None)
            if isinstance(node, (cst.Import, cst.ImportFrom)):
                for qname in assignment.get_qualified_names_for(assignment.name):
                    if qname.name == root or qname.name.startswith(root + "."):
                        return True
        return False

    def bindings_of(self, name: cst.Name):
        """``(scope, assignments)``: the scope ``name`` is read in and the assignments of its
        identifier there; None when the name has no scope or is not bound in it."""
        try:
            scope = self.get_metadata(ScopeProvider, name)
        except KeyError:
            return None
        if scope is None or name.value not in scope:
            return None
        return scope, list(scope[name.value])

    def _module_scope(self):
        module = self.context.module
        if module is None:
            return None
        try:
            return self.get_metadata(ScopeProvider, module)
        except KeyError:
            return None

    def position(self, node: cst.CSTNode) -> tuple[int, int]:
        try:
            start = self.get_metadata(PositionProvider, node).start
        except KeyError:
            return (0, 0)
        return (start.line, start.column + 1)

    # ----------------------------------------------------------------- bookkeeping
    def record_rewrite(self, count: int = 1) -> None:
        """Count an edit this rule made (feeds the `applied` list and the statistics)."""
        rewrites: Counter = self.context.scratch.setdefault(REWRITES_KEY, Counter())
        rewrites[self.CODE] += count

    def align_original(self, node: cst.CSTNode, kind: str) -> None:
        """Ask `tpu-migrate verify` to make the original run do what this edit of ``node`` (an
        original node) makes the migrated one do; ``kind`` is one the verify bootstrap knows."""
        try:
            span = self.get_metadata(PositionProvider, node)
        except KeyError:
            return
        adjustments: list = self.context.scratch.setdefault(ADJUSTMENTS_KEY, [])
        adjustments.append(VerifyAdjustment(self.CODE, kind, span.start.line, span.end.line))

    def require_import(self, spec: ImportSpec) -> None:
        AddImportsVisitor.add_needed_import(self.context, spec.module, spec.obj, spec.asname)

    def release_binding(self, node: cst.CSTNode) -> None:
        """``node`` (``xm.mark_step`` or ``mark_step``) is going away: drop the import that bound
        its root name at the end of the pipeline if nothing else uses that import by then."""
        root = node
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return
        try:
            scope = self.get_metadata(ScopeProvider, root)
        except KeyError:
            return
        if scope is None:
            return
        for assignment in scope[root.value]:
            binding = getattr(assignment, "node", None)
            if isinstance(binding, cst.Import) or (
                isinstance(binding, cst.ImportFrom) and not binding.relative
            ):
                RemoveImportsVisitor.remove_unused_import_by_node(self.context, binding)

    def keep_file_off_xla(self, why: str) -> None:
        """No later rule of the pipeline touches this file: what it does cannot run on XLA
        (the rule reports why)."""
        self.context.scratch[OFF_XLA_KEY] = why

    def device_expression(self, node: cst.CSTNode) -> cst.BaseExpression:
        """How code at ``node`` should name the XLA device: the ``device`` variable when it is
        bound before ``node`` in the same scope or comes from an enclosing one (a parameter, a
        module global) and is not a CUDA device index, else ``torch_xla.device()``."""
        from ._device_index import holds_only_indices  # (it builds on this module)

        scope = self.get_metadata(ScopeProvider, node, None)
        position = self.get_metadata(PositionProvider, node, None)
        if (
            scope is not None
            and position is not None
            and "device" in scope
            # (``device = 0``: a CUDA device by its number, not a device to move to)
            and not holds_only_indices(self, scope, "device")
        ):
            for assignment in scope["device"]:
                if assignment.scope is not scope:
                    return cst.Name("device")
                bound_at = self.get_metadata(PositionProvider, assignment.node, None)
                if bound_at is not None and bound_at.start.line < position.start.line:
                    return cst.Name("device")
        self.require_import(TORCH_XLA)
        return cst.parse_expression("torch_xla.device()")

    def flag(self, node: cst.CSTNode, code: str, message: str) -> None:
        """Report a finding at ``node`` and put an inline TODO marker above its statement."""
        if code in self.context.scratch.get(DISABLED_FINDINGS_KEY, ()):
            return
        if self._suppressions_possible and self._suppressed_around(node, code):
            return
        line, column = self.position(node)
        findings: list = self.context.scratch.setdefault(FINDINGS_KEY, [])
        findings.append(Finding(code, line, column, message))
        self.warn(f"{line}:{column}: {code} {message}")
        statement = self._enclosing_statement(node)
        if statement is not None:
            self._markers.setdefault(id(statement), []).append(f"{MARKER_PREFIX} {code} {message}")

    def _enclosing_statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        current: cst.CSTNode | None = node
        while current is not None:
            if isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return current
            try:
                current = self.get_metadata(ParentNodeProvider, current)
            except KeyError:
                return None
        return None

    def assigned_value(self, assignment) -> cst.BaseExpression | None:
        """The expression a scope assignment binds to its name (``x = value``,
        ``x: T = value``); None for any other binding: a parameter, an import, a loop variable, a
        part of a tuple target, an augmented assignment."""
        bound = getattr(assignment, "node", None)
        if not isinstance(bound, cst.Name):
            return None
        target = self.get_metadata(ParentNodeProvider, bound, None)
        if isinstance(target, cst.AnnAssign) and target.target is bound:
            return target.value
        if not isinstance(target, cst.AssignTarget):
            return None
        statement = self.get_metadata(ParentNodeProvider, target, None)
        return statement.value if isinstance(statement, cst.Assign) else None

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        # libcst's visit order, without copying the nodes the rule leaves alone, nor entering
        # those it has nothing to do in
        return visit_without_copying(tree, self, self._unentered)

    # ----------------------------------------------------------------- suppressions
    def on_visit(self, node) -> bool:
        # ``type(...) is``, as on every path that runs for each node (migrate/fastcst/traversal.py)
        if type(node) is cst.Module:
            self._start_module(node)
        elif self._suppressions_possible and isinstance(node, STATEMENTS):
            self._enter_if_suppressed(node)
        visit = self._handler("visit", type(node))
        return True if visit is None else visit(self, node) is not False

    # A field's handlers (``visit_Call_func`` and the like) by name, as libcst's transformer
    # finds them, without the matcher checks of the base class (rules use no matchers). Being
    # libcst's, they tell the rules' walk that no rule needs them called (migrate/fastcst/traversal.py).
    on_visit_attribute = cst.CSTTransformer.on_visit_attribute
    on_leave_attribute = cst.CSTTransformer.on_leave_attribute

    def _handler(self, prefix: str, node_type: type):
        """What ``CSTTransformer`` finds by name on every node, looked up once per class; the
        no-op defaults libcst defines for every node type count as none. (Field handlers,
        ``visit_Call_func`` and the like, are left to libcst's own dispatch.)"""
        key = (prefix, node_type)
        try:
            return self._handlers[key]
        except KeyError:
            name = f"{prefix}_{node_type.__name__}"
            if plain_libcst():  # libcst's own lookup, its no-op defaults included
                function = getattr(type(self), name, None)
            else:
                function = own_method(type(self), name)
            self._handlers[key] = function
            return function

    def _start_module(self, module: cst.Module) -> None:
        has = self.context.scratch.get(HAS_SUPPRESSIONS_KEY)
        if has is None:  # run on its own, not by the engine
            has = SUPPRESSION_PATTERN.search(module.code) is not None
        self._suppressions_possible = has
        self._rewrites_at_start = self._recorded_rewrite_count()
        self._imports_at_start = len(self.context.scratch.get(AddImportsVisitor.CONTEXT_KEY, ()))

    def statement_suppressions(self, statement: cst.CSTNode) -> list[Suppression]:
        """The suppression comments at the end of ``statement``'s own lines: all of a simple
        statement's lines, a compound statement's header lines (not its body's)."""
        found = []
        for part in _own_parts(statement):
            for comment in _trailing_comments(part):
                codes = parse_suppression(comment.value)
                if codes is not None:
                    found.append(Suppression(self.position(comment)[0], codes))
        return found

    def suppression_of(self, statement: cst.CSTNode, code: str) -> tuple[Suppression, str] | None:
        """The suppression on ``statement`` that names ``code``, with the code as written."""
        if not self._suppressions_possible:
            return None
        for suppression in self.statement_suppressions(statement):
            token = suppression.token_for(code)
            if token is not None:
                return suppression, token
        return None

    def _suppressed_around(self, node: cst.CSTNode, code: str) -> bool:
        """Whether a statement containing ``node`` suppresses ``code``; records the use."""
        match = self._suppression_around(node, code)
        if match is not None:
            self._record_used(*match)
        return match is not None

    def _suppression_around(self, node: cst.CSTNode, code: str) -> tuple[Suppression, str] | None:
        current: cst.CSTNode | None = node
        while current is not None:
            if isinstance(current, STATEMENTS):
                match = self.suppression_of(current, code)
                if match is not None:
                    return match
            current = self.get_metadata(ParentNodeProvider, current, None)
        return None

    def _record_used(self, suppression: Suppression, token: str) -> None:
        used: list = self.context.scratch.setdefault(USED_SUPPRESSIONS_KEY, [])
        used.append((suppression.line, token))

    def _enter_if_suppressed(self, statement: cst.CSTNode) -> None:
        match = self.suppression_of(statement, self.CODE)
        if match is None:
            return
        self._suppressed[id(statement)] = _SuppressedStatement(
            suppression=match[0],
            token=match[1],
            rewrites=self._recorded_rewrite_count(),
            findings=len(self.context.scratch.get(FINDINGS_KEY, ())),
            adjustments=len(self.context.scratch.get(ADJUSTMENTS_KEY, ())),
            imports=len(self.context.scratch.get(AddImportsVisitor.CONTEXT_KEY, ())),
            refused=self._refused_edits,
        )

    def _leave_suppressed(self, original_node, updated_node):
        """``original_node`` unchanged, and what the rule did inside it taken back."""
        entered = self._suppressed.pop(id(original_node))
        rewrites: Counter = self.context.scratch.setdefault(REWRITES_KEY, Counter())
        findings: list = self.context.scratch.setdefault(FINDINGS_KEY, [])
        imports: list = self.context.scratch.setdefault(AddImportsVisitor.CONTEXT_KEY, [])
        hid_something = (
            rewrites[self.CODE] != entered.rewrites
            or len(findings) != entered.findings
            or self._refused_edits != entered.refused
            or not isinstance(updated_node, cst.CSTNode)  # removed or split
            or not (updated_node is original_node or updated_node.deep_equals(original_node))
        )
        rewrites[self.CODE] = entered.rewrites
        del findings[entered.findings :]
        del self.context.scratch.setdefault(ADJUSTMENTS_KEY, [])[entered.adjustments :]
        del imports[entered.imports :]
        self._markers.pop(id(original_node), None)
        if hid_something:
            self._record_used(entered.suppression, entered.token)
        return original_node

    def refuses_statement_edit(self, target: cst.CSTNode) -> bool:
        """For ``AppliesStatementEdits``: an edit of a statement (or at the end of a block) inside
        a statement whose suppression names this rule is not made. Each edit refused outside the
        visit of a suppressed statement (planned ahead) takes back the one rewrite the rule
        records for it; inside one, leaving the statement takes back everything."""
        if not self._suppressions_possible:
            return False
        match = self._suppression_around(target, self.CODE)
        if match is None:
            return False
        self._refused_edits += 1
        if not self._suppressed:
            self._rewrites_owed += 1
            self._record_used(*match)
        return True

    def _settle_refused_edits(self) -> None:
        """Take back the rewrites of edits refused ahead of the visit; when none of the rule's
        edits is left in the file, the imports it asked for are not needed either."""
        rewrites: Counter = self.context.scratch.setdefault(REWRITES_KEY, Counter())
        start = self._rewrites_at_start
        rewrites[self.CODE] = max(start, rewrites[self.CODE] - self._rewrites_owed)
        self._rewrites_owed = 0
        if rewrites[self.CODE] == start:
            del self.context.scratch.setdefault(AddImportsVisitor.CONTEXT_KEY, [])[
                self._imports_at_start :
            ]

    def _recorded_rewrite_count(self) -> int:
        return self.context.scratch.get(REWRITES_KEY, Counter())[self.CODE]

    def on_leave(self, original_node, updated_node):
        leave = self._handler("leave", type(original_node))
        result = updated_node if leave is None else leave(self, original_node, updated_node)
        if self._suppressed and id(original_node) in self._suppressed:
            return self._leave_suppressed(original_node, result)
        markers = self._markers.pop(id(original_node), None) if self._markers else None
        if markers and isinstance(result, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            result = with_marker_comments(result, markers)
        if type(result) is cst.Module:
            if self._refused_edits:
                self._settle_refused_edits()
            result = _without_markers_repeated_in_header(result)
        return result


class _UnenteredWhenFirstWalked:
    """A rule class's ``_unentered``, worked out on first use and then kept on the class.

    Working it out reads the annotations of every libcst node type (``types_leading_nowhere``),
    which cost more than importing all the rules: ``rules``, ``explain`` and a re-check whose
    every file is in the cache never walk a tree, and do not pay for it."""

    def __get__(self, instance: object, owner: type) -> frozenset[type]:
        unentered = types_leading_nowhere(handled_node_types(owner) | ALWAYS_ENTERED)
        owner._unentered = unentered  # replaces this (each rule class has its own)
        return unentered


_UNENTERED_WHEN_FIRST_WALKED = _UnenteredWhenFirstWalked()


def _refuse_matcher_decorators(rule: type) -> None:
    """The fast dispatch of ``TpuCodemod`` ignores ``@m.visit``/``@m.call_if_inside`` and the
    like: a rule using one must fail loudly, not run without it."""
    for name, member in vars(rule).items():
        if any(hasattr(member, mark) for mark in MATCHER_ATTRIBUTES):
            raise TypeError(f"{rule.__name__}.{name}: rules cannot use libcst matcher decorators")


def _own_parts(statement: cst.CSTNode) -> list[cst.CSTNode]:
    """The parts of a statement on its own lines: without the comment lines above it and, for a
    compound statement, without the statements of its blocks."""
    if isinstance(statement, cst.SimpleStatementLine):
        return [*statement.body, statement.trailing_whitespace]
    blocks = {id(getattr(statement, name, None)) for name in ("body", "orelse", "finalbody")}
    for name in ("handlers", "cases"):  # try / match
        blocks.update(id(block) for block in getattr(statement, name, ()))
    parts = [child for child in statement.children if id(child) not in blocks]
    body = getattr(statement, "body", None)
    if isinstance(body, cst.IndentedBlock):
        parts.append(body.header)
    elif body is not None:
        parts.append(body)  # ``if x: a  # comment``
    return [part for part in parts if not isinstance(part, cst.EmptyLine)]


def _trailing_comments(node: cst.CSTNode) -> Iterator[cst.Comment]:
    """Comments at the end of a line under ``node`` (own-line comments are not trailing)."""
    if isinstance(node, cst.Comment):
        yield node
    elif not isinstance(node, cst.EmptyLine):
        for child in node.children:
            yield from _trailing_comments(child)


def statement_call(statement: cst.CSTNode) -> cst.Call | None:
    """The call of a statement that is one bare call (``print(x)``, ``xm.rendezvous("a")``)."""
    if (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, cst.Call)
    ):
        return statement.body[0].value
    return None


def code_of(node: cst.CSTNode) -> str:
    """The source text of ``node`` on its own."""
    return node_code(node)


def dotted_name(node: cst.CSTNode) -> str | None:
    """``a.b.c`` for a chain of names, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def with_keyword_argument(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` with ``keyword=value`` added in the call's own layout: last (before any
    ``**kwargs``), on a line of its own with a trailing comma when the arguments are one per
    line, else after ``, ``."""
    new_arg = cst.Arg(
        value,
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new_arg])
    unpacked = next((i for i, arg in enumerate(args) if arg.star == "**"), None)
    if unpacked is not None:  # keyword arguments go before ``**kwargs``, as people write them
        previous = args[unpacked - 1].comma if unpacked else None
        spacing = (
            previous.whitespace_after
            if isinstance(previous, cst.Comma)
            else cst.SimpleWhitespace(" ")
        )
        new_arg = new_arg.with_changes(comma=cst.Comma(whitespace_after=spacing))
        return call.with_changes(args=[*args[:unpacked], new_arg, *args[unpacked:]])
    last = args[-1]
    comma = last.comma if isinstance(last.comma, cst.Comma) else None
    if comma is not None and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
        before_last = args[-2].comma.whitespace_after if len(args) > 1 else None  # type: ignore
        if before_last is None:
            before_last = call.whitespace_before_args
        args[-1] = last.with_changes(comma=comma.with_changes(whitespace_after=before_last))
        return call.with_changes(args=[*args, new_arg.with_changes(comma=comma)])
    # ``f(a, b)`` or ``f(\n    a, b\n)``: the space before ``)`` moves behind the new argument
    args[-1] = last.with_changes(
        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
        whitespace_after_arg=cst.SimpleWhitespace(""),
    )
    new_arg = new_arg.with_changes(whitespace_after_arg=last.whitespace_after_arg)
    return call.with_changes(args=[*args, new_arg])


def walk_all(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node under it in source order, layout aside: whitespace, comments and
    line breaks, which no rule looks for and which are over half of a tree's nodes."""
    return walk_pruned(node, LAYOUT)


def walk_pruned(node: cst.CSTNode, skipped: Collection[type]) -> Iterator[cst.CSTNode]:
    """``node`` and every node under it in source order, without the child nodes of the
    ``skipped`` types and their subtrees (concrete node classes, matched by type: see
    migrate/fastcst/traversal.py). An explicit stack: recursive generators cost a frame per level for
    every node, which made walking deep trees a large share of the rules' time."""
    pending = [node]
    children_of = children_reader()
    while pending:
        current = pending.pop()
        yield current
        children = children_of(current)
        if skipped:
            children = [c for c in children if type(c) not in skipped]
        pending.extend(reversed(children))


def _module_level_imports(module: cst.Module | None) -> list[str] | bool:
    """The full names the module's own import statements bind (not those of functions and
    classes): what libcst's module scope would say, without its scope analysis of the whole
    file. False when a ``global`` statement may let a function import into the module."""
    if module is None:
        return []
    declared_global: set[str] = set()
    bound_by_imports: set[str] = set()
    module_level: list[str] = []
    # One walk over the blocks and statements, the only nodes that can hold an import or a
    # ``global``; ``nested``: inside a function or class, whose imports the module scope does
    # not bind.
    unentered = _holding_no_import()
    pending: list[tuple[cst.CSTNode, bool]] = [(module, False)]
    children_of = children_reader()
    while pending:
        node, nested = pending.pop()
        if isinstance(node, cst.Global):
            declared_global.update(item.name.value for item in node.names)
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            bound_by_imports.update(_bound_names(node))
            if not nested:
                module_level.extend(_imported_names(node))
            continue
        inner = nested or type(node) in (cst.FunctionDef, cst.ClassDef)
        pending.extend(
            (child, inner) for child in reversed(children_of(node)) if type(child) not in unentered
        )
    if not declared_global.isdisjoint(bound_by_imports):
        return False
    return module_level


@functools.cache
def _holding_no_import() -> frozenset[type]:
    """The node types that can hold no import and no ``global`` (expressions, parameters,
    whitespace...): ``_module_level_imports`` does not enter them."""
    return types_leading_nowhere(frozenset({cst.Global, cst.Import, cst.ImportFrom}))


def _bound_names(node: cst.Import | cst.ImportFrom) -> list[str]:
    """The names an import statement binds: ``import a.b`` binds ``a``."""
    if isinstance(node.names, cst.ImportStar):
        return []
    return [alias.evaluated_alias or alias.evaluated_name.split(".")[0] for alias in node.names]


def _imported_names(node: cst.CSTNode) -> list[str]:
    """The full names an import statement binds (``import a.b as c``: ``a.b``; ``from a import
    b``: ``a.b``); none for other nodes, relative and star imports."""
    if isinstance(node, cst.Import):
        return [dotted_name(alias.name) or "" for alias in node.names]
    if isinstance(node, cst.ImportFrom) and not node.relative and node.module is not None:
        if isinstance(node.names, cst.ImportStar):
            return []
        module = dotted_name(node.module) or ""
        return [f"{module}.{dotted_name(alias.name)}" for alias in node.names]
    return []


def with_marker_comments(statement, markers: Iterable[str]):
    """Add each marker as a comment line above ``statement`` unless an equal one is there."""
    present = {line.comment.value for line in statement.leading_lines if line.comment}
    present_codes = {value.split()[2] for value in present if value.startswith(MARKER_PREFIX)}
    new_lines = list(statement.leading_lines)
    for marker in dict.fromkeys(markers):
        code = marker.split()[2]
        if marker in present or code in present_codes:
            continue
        new_lines.append(cst.EmptyLine(indent=True, comment=cst.Comment(marker)))
        present_codes.add(code)
    if len(new_lines) == len(statement.leading_lines):
        return statement
    return statement.with_changes(leading_lines=new_lines)


def _marker_code(line: cst.EmptyLine) -> str | None:
    if line.comment and line.comment.value.startswith(MARKER_PREFIX):
        return line.comment.value.split()[2]
    return None


def _without_markers_repeated_in_header(module: cst.Module) -> cst.Module:
    """Comments above a file's first statement are parsed into ``Module.header``, where
    ``with_marker_comments`` cannot see them: drop a marker the header already has."""
    if not module.body or not module.header:
        return module
    in_header = {_marker_code(line) for line in module.header} - {None}
    first = module.body[0]
    kept = [line for line in first.leading_lines if _marker_code(line) not in in_header]
    if len(kept) == len(first.leading_lines):
        return module
    return module.with_changes(body=[first.with_changes(leading_lines=kept), *module.body[1:]])


def tidy_torch_xla_imports(module: cst.Module) -> cst.Module:
    """Sort each run of adjacent top-level ``import torch_xla...`` lines by module name.

    libcst appends new imports after the last one; when it removed an old ``xm`` import just
    before, ``import torch_xla`` would land below ``import torch_xla.runtime as xr``. Leading
    blank lines stay where they were; runs that carry comments are left alone.
    """
    body = list(module.body)
    changed = False
    start = 0
    while start < len(body):
        end = start
        while end < len(body) and _torch_xla_import_name(body[end]) is not None:
            end += 1
        if end - start > 1 and not any(
            line.comment for stmt in body[start + 1 : end] for line in stmt.leading_lines
        ):
            run = body[start:end]
            ordered = sorted(run, key=_torch_xla_import_name)
            if ordered != run:
                changed = True
                body[start:end] = [
                    new.with_changes(leading_lines=old.leading_lines)
                    for old, new in zip(run, ordered)
                ]
        start = end + 1
    return module.with_changes(body=body) if changed else module


def _torch_xla_import_name(statement: cst.CSTNode) -> str | None:
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    node = statement.body[0]
    if not (isinstance(node, cst.Import) and len(node.names) == 1):
        return None
    name = code_of(node.names[0].name)
    return name if name == "torch_xla" or name.startswith("torch_xla.") else None
