"""Metadata computed once per tree and shared by every rule that runs on that tree.

libcst's ``Codemod.transform_module`` builds a fresh ``MetadataWrapper`` for every rule: a deep copy
of the module plus the scope, qualified-name, parent and position passes. On a file most rules leave
alone that is most of the run time (measured on the torch sources: about 80% of the per-file time).
Here a rule that leaves the tree alone hands the same tree, with the metadata already resolved, to
the next rule; only a rule that edits the tree makes the next one pay for fresh metadata. And a
provider is resolved only when a rule first asks for it: a pass that reports nothing never pays
for positions, and qualified names are worked out only for the nodes a rule asks about.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import itertools
import re
from collections.abc import Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from types import MappingProxyType
from typing import Iterator, NamedTuple

import libcst as cst
from libcst._nodes.internal import CodegenState  # private: tests/engine/test_fast_paths.py pins it
from libcst.codemod import Codemod, ContextAwareTransformer
from libcst.helpers import get_full_name_for_node
from libcst.metadata import (
    BatchableMetadataProvider,
    CodePosition,
    CodeRange,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    QualifiedName,
    QualifiedNameProvider,
    ScopeProvider,
)
from libcst.metadata.scope_provider import (  # private: see _ScopeVisitor
    _ASSIGNMENT_LIKE_NODES,
    ScopeVisitor,
)

from . import plain_libcst
from .codegen import Generated, StatementCode, generated_state, module_code
from .traversal import (
    LAYOUT,
    children_reader,
    handled_node_types,
    types_leading_nowhere,
    visit_without_copying,
)


def shared_metadata(
    module: cst.Module, code: str | None = None
) -> "SharedMetadata | StockMetadata":
    """The metadata of a pipeline's trees: shared between the rules, or with
    ``TPU_MIGRATE_PLAIN_LIBCST=1`` computed by libcst for each pass."""
    return StockMetadata(module, code) if plain_libcst() else SharedMetadata(module, code)


def positions_of(module: cst.Module) -> Mapping:
    """node -> ``CodeRange`` for every node of ``module`` (libcst's ``PositionProvider``)."""
    if plain_libcst():
        return MetadataWrapper(module).resolve(PositionProvider)
    return Positions(module)


class StockMetadata:
    """``SharedMetadata``'s interface, on libcst alone: each pass is ``Codemod.transform_module``,
    which wraps the tree (a copy) and resolves the pass's providers on it, as libcst's own
    codemod runner does. The imports are left to the engine, which fixes them once."""

    statements = None  # (nothing generated is reused: ``module_code`` is ``Module.code``)

    def __init__(self, module: cst.Module, code: str | None = None) -> None:
        self.module = module
        self._code = code

    def transform(self, rule: Codemod, on_demand: bool = True) -> cst.Module:
        return Codemod.transform_module(rule, self.module)

    def advance(self, new_module: cst.Module, edited: bool, code: str | None = None) -> cst.Module:
        if new_module is not self.module:
            self.module, self._code = new_module, code
        return new_module

    @property
    def code(self) -> str:
        if self._code is None:
            self._code = self.module.code
        return self._code

    def release(self) -> None:
        pass


class SharedMetadata:
    def __init__(self, module: cst.Module, code: str | None = None) -> None:
        """``code``: ``module``'s code when the caller has it (the text it was parsed from)."""
        self._wrapper: MetadataWrapper | None = _wrapper_of(module)
        self._module = module
        self._current_code = code
        self._resolved: dict[type, Mapping] = {}
        self._name_sources: NameSources | None = None  # the current tree's, with its scopes
        self.statements = StatementCode()  # the code of this run's trees' statements

    @property
    def module(self) -> cst.Module:
        return self._wrapper.module if self._wrapper is not None else self._module

    def transform(self, rule: Codemod, on_demand: bool = True) -> cst.Module:
        """What ``Codemod.transform_module`` does for one pass, on the shared wrapper.

        ``on_demand``: resolve each provider when the rule first reads it. libcst's own
        visitors (the import fixers) need theirs resolved up front: the helper visitors they
        start read the wrapper's resolved metadata directly. Those helpers are read-only
        visitors, walked without copying (``_visits_without_copying``).
        """
        if self._wrapper is None:
            self._wrapper = _wrapper_of(self._module)
            self._resolved = {}
            self._name_sources = None
        wrapper = self._wrapper
        dependencies = rule.get_inherited_dependencies()
        with nullcontext() if on_demand else _visits_without_copying():
            if on_demand:
                rule.metadata = _OnDemand(self, dependencies)
            else:
                rule.metadata = {provider: self.resolved(provider) for provider in dependencies}
                wrapper.resolve_many(dependencies)  # what the helpers read
            rule.context = replace(rule.context, wrapper=wrapper)
            try:
                return _one_pass(rule, wrapper.module)
            finally:
                rule.context = replace(rule.context, wrapper=None)
                rule.metadata = {}

    def resolved(self, provider: type) -> Mapping:
        """``provider``'s metadata for the current tree, computed on first use."""
        try:
            return self._resolved[provider]
        except KeyError:
            pass
        if provider is QualifiedNameProvider:
            # libcst's provider visits every node of the tree to attach a lazy value to each;
            # asking the scope of just the nodes a rule looks at gives the same names.
            scopes = self.resolved(ScopeProvider)
            metadata: Mapping = _QualifiedNames(
                scopes, self.resolved(ParentNodeProvider), self._name_sources
            )
        elif provider is PositionProvider:
            metadata = Positions(self.module, self.statements)
            if self._current_code is None:
                self._current_code = metadata.code  # that code generation gave the code too
        elif _visits_only_the_module(provider):
            metadata = self._whole_module_metadata(provider)
        else:
            metadata = self._wrapper.resolve(provider)
        self._resolved[provider] = metadata
        return metadata

    def _whole_module_metadata(self, provider: type) -> Mapping:
        """What ``MetadataWrapper.resolve(provider)`` gives, for a provider that does all its
        work in ``visit_Module`` (scopes, expression contexts: each walks the tree with its own
        visitor from there).

        libcst resolves a batchable provider by walking the whole tree and calling its visit
        methods on the way; after ``visit_Module`` that walk only costs, and it was about 40% of
        resolving the scopes of a large file. Calling ``visit_Module`` on its own gives the same
        metadata: the walk has nothing else to call.
        """
        wrapper = self._wrapper
        computed = getattr(wrapper, "_metadata", None)
        if not isinstance(computed, dict):  # (a private detail of libcst, as in _wrapper_of)
            return wrapper.resolve(provider)
        if provider in computed:  # the parents, from _wrapper_of
            return computed[provider]
        for dependency in provider.METADATA_DEPENDENCIES:
            self.resolved(dependency)  # in the wrapper too, where ``instance.resolve`` looks
        instance = _CHEAPER_PROVIDERS.get(provider, provider)()
        with instance.resolve(wrapper), _visits_without_copying():
            instance.visit_Module(wrapper.module)
        metadata = MappingProxyType(dict(instance._computed))
        if isinstance(instance, _ScopeProvider):
            self._name_sources = instance.sources
        computed[provider] = metadata  # what libcst's own visitors (the import fixers) read
        return metadata

    def advance(self, new_module: cst.Module, edited: bool, code: str | None = None) -> cst.Module:
        """Take a rule's output as the tree for the next rule; returns that tree.

        ``edited`` is what the rule reported (rewrites, markers); a rule that reported nothing
        normally returns the same tree, which keeps the resolved metadata. ``code``:
        ``new_module``'s code, when the caller has generated it already.
        """
        current = self.module
        if new_module is current or (
            not edited and module_code(new_module, self.statements) == self.code
        ):
            # Equal code is enough: the rule's output is dropped and the next rule gets the
            # current tree, whose metadata is resolved (cheaper to tell than deep_equals).
            return current
        self._forget_tree()
        self._module = new_module
        self._current_code = code
        return new_module

    @property
    def code(self) -> str:
        """The current tree's code, generated once per tree."""
        if self._current_code is None:
            self._current_code = module_code(self.module, self.statements)
        return self._current_code

    def release(self) -> None:
        """Called when the run is done: what it kept goes now, not when Python's cycle
        collector gets to it (``_forget_tree``)."""
        self._forget_tree()
        self.statements.clear()

    def _forget_tree(self) -> None:
        """Drop the current tree's metadata, its scopes emptied first.

        libcst's scopes, assignments and accesses refer to each other. Left as they are, they
        and every node they refer to (whole functions, through their assignments) outlive the
        tree until the cycle collector walks them all: 5.7 million objects over a quarter of
        the changed torch files, 3.5 s. Emptied, they go with the tree."""
        scopes = self._resolved.get(ScopeProvider)
        if scopes is not None:
            _empty_scopes(scopes)
        self._wrapper = None
        self._resolved = {}
        self._name_sources = None


def _empty_scopes(scopes: Mapping) -> None:
    """Empty every scope in ``scopes`` (node -> scope) and the scopes around them, up to the
    builtins: their assignments and accesses, and each assignment's accesses (private:
    libcst's ``BaseAssignment.__accesses``; tests/engine/test_fast_paths.py pins it)."""
    every_scope = set()
    for scope in dict.fromkeys(scopes.values()):
        while scope is not None and scope not in every_scope:
            every_scope.add(scope)
            scope = scope.parent if scope.parent is not scope else None  # (the builtins' is)
    for scope in every_scope:
        for assignments in scope._assignments.values():
            for assignment in assignments:
                accesses = getattr(assignment, "_BaseAssignment__accesses", None)
                if accesses is not None:
                    accesses.clear()
        scope._assignments.clear()
        scope._accesses_by_name.clear()
        scope._accesses_by_node.clear()


def _one_pass(rule: Codemod, module: cst.Module) -> cst.Module:
    """``rule.transform_module_impl(module)``. For libcst's own transformers (the import
    remover), whose pass is ``module.visit(self)``, the same calls without copying the nodes
    they leave alone: libcst's copying walk was a third of the remover's time on
    distributed_test.py."""
    if type(rule).transform_module_impl is ContextAwareTransformer.transform_module_impl:
        return visit_without_copying(module, rule)
    return rule.transform_module_impl(module)


@contextmanager
def _visits_without_copying() -> Iterator[None]:
    """While scopes or expression contexts are computed, and while libcst's import fixers run,
    libcst's read-only visitors walk with ``visit_without_copying``.

    Their visit methods walk chosen children themselves (``node.target.visit(...)``), so the
    walk cannot be swapped from outside: ``CSTNode.visit`` is, for the duration. For a read-only
    visitor the two walks are the same calls in the same order on the same nodes (what
    tests/engine/test_traversal.py checks), but libcst's rebuilds every node it enters and throws
    the copies away: over a quarter of the torch sources, scopes and contexts took 26.3 s with
    it and 14.8 s without. Transformers keep libcst's own walk.
    """
    libcst_visit = cst.CSTNode.visit

    def visit(node: cst.CSTNode, visitor):
        if isinstance(visitor, cst.CSTVisitor):
            return visit_without_copying(node, visitor, _unentered_by(type(visitor)))
        return libcst_visit(node, visitor)

    cst.CSTNode.visit = visit
    try:
        yield
    finally:
        cst.CSTNode.visit = libcst_visit


@functools.cache
def _unentered_by(visitor_type: type) -> frozenset[type]:
    """The node types a read-only visitor's walk need not enter (``visit_without_copying``).

    - ``_ScopeVisitor``: whitespace, comments and line breaks, over half of a tree's nodes.
      libcst's visitor gives them the scope around them; no rule, and none of libcst's import
      fixers, asks the scope of a layout node.
    - A visitor whose ``on_visit`` and ``on_leave`` are libcst's (the expression contexts'):
      the node types holding none it has a method for, which it would only pass through.
    - Any other: none.
    """
    if issubclass(visitor_type, _ScopeVisitor):
        return LAYOUT
    if (
        visitor_type.on_visit is cst.CSTVisitor.on_visit
        and visitor_type.on_leave is cst.CSTVisitor.on_leave
    ):
        return types_leading_nowhere(handled_node_types(visitor_type))
    return frozenset()


class _ScopeVisitor(ScopeVisitor):
    """libcst's scope visitor with two shortcuts; the scope test in
    tests/engine/test_fast_paths.py compares every scope with libcst's.

    - An assignment-like node is told by its type. libcst's ``on_leave`` asks
      ``isinstance(node, _ASSIGNMENT_LIKE_NODES)`` of every node: a tuple of 13
      abstract-base-class-checked node types, about 2.3 µs per node, and a third of the time of
      computing the scopes. Every concrete libcst node type is final, so the answer is one per
      type. The rest of ``on_leave`` is libcst's own.
    - A call's qualified names are looked up only when they can hold ``typing.NewType``,
      ``typing.TypeVar`` or ``typing.cast`` (``NameSources.could_be_named``), the names libcst's
      ``visit_Call`` looks for; otherwise the call is entered as libcst enters it then. The
      lookup was a third of the time of computing the scopes of common_methods_invocations.py.
      A lookup sees the imports visited before it, so they are noted as they are visited
      (``NameSources``).
    """

    def __init__(self, provider: ScopeProvider) -> None:
        super().__init__(provider)
        self.sources = NameSources()

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.provider.set_metadata(original_node, self.scope)
        if _is_assignment_like(type(original_node)):
            self.scope._assignment_count += 1
        cst.CSTVisitor.on_leave(self, original_node)

    def visit_Import(self, node: cst.Import) -> bool | None:
        self.sources.note_import(node.names)
        return super().visit_Import(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool | None:
        self.sources.note_import(node.names)
        return super().visit_ImportFrom(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> bool | None:
        self.sources.scope_names.add(node.name.value)
        return super().visit_ClassDef(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool | None:
        self.sources.scope_names.add(node.name.value)
        return super().visit_FunctionDef(node)

    def visit_Call(self, node: cst.Call) -> bool | None:
        if self.sources.could_be_named(node, _TYPING_SPECIAL_FORMS):
            return super().visit_Call(node)
        # what libcst's visit_Call does for a call that is none of them (private: libcst's
        # stacks; tests/engine/test_fast_paths.py pins them)
        self._ScopeVisitor__top_level_attribute_stack.append(None)
        self._ScopeVisitor__in_type_hint_stack.append(False)
        return True


_TYPING_SPECIAL_FORMS = ("typing.NewType", "typing.TypeVar", "typing.cast")


@functools.cache
def _is_assignment_like(node_type: type) -> bool:
    return issubclass(node_type, _ASSIGNMENT_LIKE_NODES)


class NameSources:
    """What a tree's qualified names can come from, noted by the scope visitor: enough to tell,
    without a scope lookup, that a node cannot have some qualified names.

    libcst derives a node's names from its dotted name (``get_full_name_for_node``; for an
    access, the dotted name it was recorded under, which is the same), through the binding of
    its first part or of a longer prefix:
    - an import: the imported name, then the rest of the dotted name (``import torch.nn as
      tnn`` makes ``tnn.Linear`` ``torch.nn.Linear``);
    - a local binding: the dotted name after the names of the scopes around it
      (``f.<locals>.x``; nothing at module level);
    - a builtin: ``builtins.`` and the first part (``int.from_bytes``: ``builtins.int``).
    A node with no dotted name (a string annotation) can have any.
    """

    def __init__(self) -> None:
        self.aliases: set[str] = set()  # ``as`` names of imports
        self.imported: set[str] = set()  # the first part of every name an import binds
        self.scope_names: set[str] = set()  # names of classes and functions

    def note_import(self, names: Sequence[cst.ImportAlias] | cst.ImportStar) -> None:
        if isinstance(names, cst.ImportStar):
            return  # (libcst binds nothing for it)
        for alias in names:
            if alias.asname is not None:
                bound = alias.evaluated_alias
                self.aliases.add(bound)
            else:
                bound = get_full_name_for_node(alias.name)
            if bound:
                self.imported.add(bound.partition(".")[0])

    def could_be_named(self, node: cst.CSTNode, names: Sequence[str]) -> bool:
        """False only when none of ``names`` can be a qualified name of ``node``: each keeps
        the dotted name's last part, but a builtin's and a bare alias's (``from torch import
        cuda as gpu``: ``gpu``)."""
        dotted = get_full_name_for_node(node)
        if dotted is None or "." not in dotted and dotted in self.aliases:
            return True
        last = dotted.rpartition(".")[2]
        builtin = "builtins." + dotted.partition(".")[0]
        return any(name == builtin or name.rpartition(".")[2] == last for name in names)

    def could_be_under(self, node: cst.CSTNode, root: str) -> bool:
        """False only when no qualified name of ``node`` starts with the name ``root`` (its
        first part): each starts with the dotted name's first part when that is bound at
        module level, with an imported module otherwise, or with the name of the outermost
        scope around it: a class, a function, or ``<lambda>`` and the like (or ``builtins``)."""
        dotted = get_full_name_for_node(node)
        if dotted is None or root == "builtins" or root.startswith("<"):
            return True
        first = dotted.partition(".")[0]
        return first == root or first in self.imported or root in self.scope_names


class _ScopeProvider(ScopeProvider):
    """``ScopeProvider`` with ``_ScopeVisitor``; its ``visit_Module`` is libcst's, but for the
    visitor's class. ``sources``: the tree's ``NameSources``."""

    sources: NameSources | None = None

    def visit_Module(self, node: cst.Module) -> None:
        visitor = _ScopeVisitor(self)
        node.visit(visitor)
        visitor.infer_accesses()
        self.sources = visitor.sources


_CHEAPER_PROVIDERS = {ScopeProvider: _ScopeProvider}


class _OnDemand(Mapping):
    """A rule's ``metadata``: provider -> node -> value, each provider resolved when first read."""

    def __init__(self, shared: SharedMetadata, providers: frozenset) -> None:
        self._shared = shared
        self._providers = providers

    def __getitem__(self, provider: type) -> Mapping:
        if provider not in self._providers:
            raise KeyError(provider)
        return self._shared.resolved(provider)

    def __contains__(self, provider: object) -> bool:
        return provider in self._providers

    def __iter__(self) -> Iterator[type]:
        return iter(self._providers)

    def __len__(self) -> int:
        return len(self._providers)


class _QualifiedNames(Mapping):
    """node -> its qualified names, as ``QualifiedNameProvider`` gives them, computed per node
    from the scope metadata. Every node of the tree but layout nodes (see ``_parents``) has an
    entry (empty where the scope pass did not reach); a node outside the tree has none, as with
    the provider.

    ``could_name`` and ``could_be_under`` answer first whether a node can bear some names at
    all, without a scope lookup: a rule asks of most calls and names whether they are one of a
    few torch names, and almost none is (``TpuCodemod.is_name``, ``may_be_under``)."""

    def __init__(
        self, scopes: Mapping, parents: Mapping, sources: NameSources | None = None
    ) -> None:
        """``sources``: the tree's ``NameSources``; None when unknown."""
        self._scopes = scopes
        self._parents = parents  # child -> parent: the tree's nodes but the root (and layout)
        self._sources = sources
        self._names: dict[cst.CSTNode, set[QualifiedName]] = {}

    def could_name(self, node: cst.CSTNode, names: Sequence[str]) -> bool:
        """False only when none of ``names`` is among ``self[node]``."""
        return self._sources is None or self._sources.could_be_named(node, names)

    def could_be_under(self, node: cst.CSTNode, root: str) -> bool:
        """False only when no name in ``self[node]`` starts with the name ``root``."""
        return self._sources is None or self._sources.could_be_under(node, root)

    def __getitem__(self, node: cst.CSTNode) -> set[QualifiedName]:
        try:
            return self._names[node]
        except KeyError:
            pass
        scope = self._scopes.get(node)
        if scope is not None:
            names = scope.get_qualified_names_for(node)
        elif node in self:
            names = set()
        else:
            raise KeyError(node)
        self._names[node] = names
        return names

    def __contains__(self, node: object) -> bool:
        return node in self._parents or isinstance(node, cst.Module) and node in self._scopes

    def __iter__(self) -> Iterator[cst.CSTNode]:
        yield from (root for root in self._scopes if isinstance(root, cst.Module))
        yield from self._parents

    def __len__(self) -> int:
        return len(self._parents) + 1


class Positions(Mapping):
    """node -> its ``CodeRange``: what libcst's ``PositionProvider`` gives, for less.

    libcst's provider works out the line and column after every token it generates and builds
    a range for every node: over 71 torch files, 8.2 s for one pass, where generating their code
    took 0.9 s. A rule asks for the positions of a few nodes. So one code generation records
    where in the token list each node's range starts and ends, decided exactly as libcst's
    provider decides it, and only the ranges asked for are turned into lines and columns.
    """

    def __init__(self, module: cst.Module, statements: StatementCode | None = None) -> None:
        """``statements``: what earlier trees' statements generated (the ranges of the simple
        statements this tree shares with them are not recorded again)."""
        state = generated_state(module, _RangeRecordingState, statements)
        self.code = "".join(state.tokens)  # ``module.code``
        self._ranges = state.ranges
        self._tokens = state.tokens + state.popped
        self._offsets: list[int] = []  # the text offset at which each token starts
        self._line_starts: list[int] = []  # the text offset after each line break

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        start, end = self._ranges[node]
        return CodeRange(self._position(start), self._position(end))

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._ranges)

    def __len__(self) -> int:
        return len(self._ranges)

    def _position(self, token_index: int) -> CodePosition:
        if not self._offsets:
            self._offsets = [0, *itertools.accumulate(map(len, self._tokens))]
            text = "".join(self._tokens)
            self._line_starts = [m.end() for m in LINE_BREAK.finditer(text)]
        offset = self._offsets[token_index]
        breaks_before = bisect.bisect_right(self._line_starts, offset)
        line_start = self._line_starts[breaks_before - 1] if breaks_before else 0
        return CodePosition(breaks_before + 1, offset - line_start)


LINE_BREAK = re.compile(r"\r\n?|\n")  # what libcst's position provider counts as one


@dataclasses.dataclass
class _RangeRecordingState(CodegenState):
    """Code generation that records each node's range as token indexes: the syntactic range
    where the node's code generation marks one (hoisted from child nodes as it says), else the
    whole of the node's code, whitespace included (libcst's ``PositionProvidingCodegenState``)."""

    ranges: dict[cst.CSTNode, tuple[int, int]] = dataclasses.field(default_factory=dict)
    order: list[cst.CSTNode] = dataclasses.field(default_factory=list)  # the keys of ``ranges``
    starts: list[int] = dataclasses.field(default_factory=list)
    # A file without a final newline loses it at the very end; the positions already taken
    # count it (as libcst's do).
    popped: list[str] = dataclasses.field(default_factory=list)
    statements: StatementCode | None = None

    def pop_trailing_newline(self) -> None:
        if self.tokens:
            self.popped.append(self.tokens.pop())

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.starts.append(self._here())

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.starts.pop()
        if node not in self.ranges:
            self.ranges[node] = (start, self._here())
            self.order.append(node)

    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> "_SyntacticRange":
        return _SyntacticRange(self, node, start_node, end_node)

    def _here(self) -> int:
        """The index of the next token, the popped newline counted (libcst's position does not
        go back when it is popped)."""
        return len(self.tokens) + len(self.popped)

    # what ``StatementCode`` asks of a code generation state (statements are generated before
    # the final newline can be popped)
    def mark(self) -> tuple[int, int]:
        return len(self.tokens), len(self.order)

    def generated_since(self, mark: tuple[int, int], statement: cst.CSTNode) -> Generated:
        start, recorded = mark
        tokens = tuple(self.tokens[start:])
        if type(statement) is not cst.SimpleStatementLine:
            # a compound statement's ranges would repeat those of every statement in it
            return Generated(tokens)
        # Read when replayed: a statement's ranges do not change once it is generated.
        return Generated(tokens, _Recorded(self, recorded, len(self.order), start))

    def replay(self, generated: Generated) -> bool:
        recorded = generated.ranges
        if recorded is None:
            return False
        offset = len(self.tokens) - recorded.start
        self.tokens.extend(generated.tokens)
        nodes = recorded.state.order[recorded.first : recorded.last]
        ranges, source = self.ranges, recorded.state.ranges
        for node in nodes:
            start, end = source[node]
            ranges[node] = (start + offset, end + offset)
        self.order.extend(nodes)
        return True


class _Recorded(NamedTuple):
    """The ranges one simple statement's code generation recorded in ``state``: those of the
    nodes ``state.order[first:last]``, from token ``start``."""

    state: _RangeRecordingState
    first: int
    last: int
    start: int


class _SyntacticRange:
    """Records ``node``'s range as the tokens generated inside the ``with`` block, or from
    ``start_node``'s start or to ``end_node``'s end. A class: a generator-based context manager
    costs about twice as much, and there is one per expression."""

    __slots__ = ("_state", "_node", "_start_node", "_end_node", "_start")

    def __init__(
        self,
        state: _RangeRecordingState,
        node: cst.CSTNode,
        start_node: cst.CSTNode | None,
        end_node: cst.CSTNode | None,
    ) -> None:
        self._state, self._node = state, node
        self._start_node, self._end_node = start_node, end_node

    def __enter__(self) -> None:
        self._start = self._state._here()

    def __exit__(self, *exc_info: object) -> None:
        state = self._state
        start = self._start if self._start_node is None else state.ranges[self._start_node][0]
        end = state._here() if self._end_node is None else state.ranges[self._end_node][1]
        if self._node not in state.ranges:
            state.order.append(self._node)
        state.ranges[self._node] = (start, end)


def _wrapper_of(module: cst.Module) -> MetadataWrapper:
    """A metadata wrapper of ``module`` with the parent of every node already known.

    libcst's ParentNodeProvider asks every node for its children through a visitor; reading the
    nodes' fields gives the same map several times faster. The walk also tells whether a node is
    held twice, which libcst's wrapper prevents by copying the whole tree: then the tree is
    copied only where a node is held again (``_unshared``).
    """
    parents = _parents(module)
    if parents is None:
        module = _unshared(module)
        parents = _parents(module)
    if parents is None:  # (not expected: libcst's wrapper copies, and computes the parents)
        return MetadataWrapper(module)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    computed = getattr(wrapper, "_metadata", None)
    if isinstance(computed, dict):  # (a private detail of libcst; otherwise libcst computes)
        computed[ParentNodeProvider] = parents
    return wrapper


def _parents(module: cst.Module) -> dict[cst.CSTNode, cst.CSTNode] | None:
    """child -> parent for every node under ``module`` but layout (whitespace, comments, line
    breaks: over half of a tree, and nothing asks their parent); None when a node appears
    twice."""
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    pending: list[cst.CSTNode] = [module]
    children_of = children_reader()
    while pending:
        node = pending.pop()
        for child in children_of(node):
            if type(child) in LAYOUT:
                continue
            if child in parents:
                return None
            parents[child] = node
            pending.append(child)
    return parents


def _unshared(module: cst.Module) -> cst.Module:
    """``module`` with a copy of its own for each place after the first where a node (but a
    layout node) is held again, and its ancestors there rebuilt; everything else is kept.

    A rule's output may hold a node twice: a module-level constant node, or libcst's own
    default ``Dot()`` of every ``Attribute`` built without one. libcst's wrapper then deep
    copies the whole module, and its parent pass walks the copy: on distributed_test.py twice,
    1.5 s. Metadata is per node object, so each place needs its own."""
    return visit_without_copying(module, _Unsharing(), LAYOUT)


class _Unsharing(cst.CSTTransformer):
    def __init__(self) -> None:
        super().__init__()
        self._seen: set[cst.CSTNode] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        return node not in self._seen

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> cst.CSTNode:
        if original_node in self._seen:
            return original_node.deep_clone()
        self._seen.add(original_node)
        return updated_node


@functools.cache
def _visits_only_the_module(provider: type) -> bool:
    """A batchable provider whose only visit method is ``visit_Module`` (see
    ``SharedMetadata._whole_module_metadata``); a provider that needs a cache is left to
    libcst."""
    if not issubclass(provider, BatchableMetadataProvider) or provider.gen_cache is not None:
        return False
    return set(provider().get_visitors()) == {"visit_Module"}
