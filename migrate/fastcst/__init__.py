"""The fast layer: where tpu-migrate runs libcst's machinery with less work, in one place.

libcst is correct but does more than a pipeline of twenty rules needs: each rule's pass rebuilds
every node, each rule's metadata wrapper copies the tree and resolves its providers over all of
it, and code generation runs again for every question about a position. Everything that
reimplements part of libcst or reaches into it lives in this package; the rules and the engine
use it only through the names these modules export (``FileFacts``, ``module_code``,
``node_code``, ``SharedMetadata``, ``with_imports_added``...). ``docs/architecture.md`` lists
each shortcut and the test that proves it gives libcst's own result.

- ``facts``: which constructs a file holds, from Python's own parser, to skip the rules that
  cannot act on it (no libcst internals).
- ``traversal``: a rule's pass that keeps the nodes it leaves alone.
- ``codegen``: code generation without positions, and each statement's code generated once.
- ``metadata``: scopes, qualified names, parents and positions computed once per tree and shared
  by the rules.
- ``imports``: libcst's import visitors run on the head of the module only.
- ``matchers``: the attributes libcst's matcher decorators set, so rules that use them are
  refused.

The libcst internals touched, and why:

- ``CSTNode._visit_and_replace_children`` (traversal): rebuild only a node whose children changed.
- ``CSTNode._codegen`` and each statement class's ``_codegen``, and
  ``libcst._nodes.internal.CodegenState`` (codegen, metadata): generate code without libcst's
  per-node position bookkeeping, and reuse a statement's tokens; the statements' ``_codegen`` is
  replaced only while one module's code is generated and put back after.
- ``CSTNode.visit`` (metadata): replaced only for the duration of a read-only provider walk, so
  that it does not copy the tree.
- ``libcst.metadata.scope_provider``: ``ScopeVisitor``'s private stacks
  (``_ScopeVisitor__top_level_attribute_stack``, ``_ScopeVisitor__in_type_hint_stack``),
  ``_ASSIGNMENT_LIKE_NODES``, a scope's ``_assignments``, ``_accesses_by_name``,
  ``_accesses_by_node`` and ``_assignment_count``, and ``BaseAssignment.__accesses`` (metadata):
  scopes computed in one walk that skips layout nodes, and emptied when a tree is done with.
- ``MetadataWrapper._metadata`` and a provider's ``_computed`` (metadata): metadata already
  resolved is handed to the next rule instead of being computed again.
- ``libcst.matchers._visitors``' gatherers (imports): replaced while the imports are fixed, so a
  visitor of a class with no decorated method is not searched for them; put back after.
- ``libcst.matchers._decorators`` (matchers): the attribute names of the decorators.

No replacement outlives the call that makes it. ``tests/engine/test_fast_paths.py`` pins each
internal, so a libcst release that moves one fails a test, not a user's run.

``TPU_MIGRATE_PLAIN_LIBCST=1`` turns every shortcut off: each rule's pass is libcst's
``Codemod.transform_module`` (its own metadata wrapper, copy included, and ``CSTNode.visit``),
code is ``Module.code``, the imports are fixed by libcst's visitors on the whole module, and
every rule the trigger words select runs (the ``FileFacts`` pre-filter is skipped).
``tests/engine/test_plain_libcst.py`` runs the rule cases, the fixtures and the torch-source sample
both ways and asserts the same output: a shortcut that disagrees with libcst fails there, and a
user who suspects one can compare a run with it off.
"""

from __future__ import annotations

import os

PLAIN_LIBCST_VARIABLE = "TPU_MIGRATE_PLAIN_LIBCST"


def plain_libcst() -> bool:
    """Whether this run goes through stock libcst only (read at each use, so a test can set it)."""
    return os.environ.get(PLAIN_LIBCST_VARIABLE) == "1"
