"""Metadata computed once per tree and shared by every rule that runs on that tree.

libcst's ``Codemod.transform_module`` builds a fresh ``MetadataWrapper`` for every rule: a deep copy
of the module plus the scope, qualified-name, parent and position passes. On a file most rules leave
alone that is most of the run time (measured on the torch sources: about 80% of the per-file time).
Here a rule that leaves the tree alone hands the same tree, with the metadata already resolved, to
the next rule; only a rule that edits the tree makes the next one pay for fresh metadata.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import replace

import libcst as cst
from libcst.codemod import Codemod
from libcst.metadata import MetadataWrapper, ParentNodeProvider


class SharedMetadata:
    def __init__(self, module: cst.Module) -> None:
        self._wrapper: MetadataWrapper | None = _wrapper_of(module)
        self._module = module
        self._current_code: str | None = None

    @property
    def module(self) -> cst.Module:
        return self._wrapper.module if self._wrapper is not None else self._module

    def transform(self, rule: Codemod) -> cst.Module:
        """What ``Codemod.transform_module`` does for one pass, on the shared wrapper."""
        if self._wrapper is None:
            self._wrapper = _wrapper_of(self._module)
        wrapper = self._wrapper
        with rule.resolve(wrapper):
            rule.context = replace(rule.context, wrapper=wrapper)
            try:
                return rule.transform_module_impl(wrapper.module)
            finally:
                rule.context = replace(rule.context, wrapper=None)

    def advance(self, new_module: cst.Module, edited: bool) -> cst.Module:
        """Take a rule's output as the tree for the next rule; returns that tree.

        ``edited`` is what the rule reported (rewrites, markers); a rule that reported nothing
        normally returns an equal tree, which keeps the resolved metadata.
        """
        current = self.module
        if new_module is current or (not edited and new_module.code == self._code()):
            # Equal code is enough: the rule's output is dropped and the next rule gets the
            # current tree, whose metadata is resolved (cheaper to tell than deep_equals).
            return current
        self._wrapper = None
        self._module = new_module
        self._current_code = None
        return new_module

    def _code(self) -> str:
        if self._current_code is None:
            self._current_code = self.module.code
        return self._current_code


def _wrapper_of(module: cst.Module) -> MetadataWrapper:
    """A metadata wrapper of ``module`` with the parent of every node already known.

    libcst's ParentNodeProvider asks every node for its children through a visitor; reading the
    nodes' fields gives the same map several times faster. The walk also tells whether a node is
    held twice (a rule's output may reuse one): only then is the deep copy libcst makes for
    safety needed.
    """
    parents = _parents(module)
    if parents is None:
        return MetadataWrapper(module)  # copies; libcst computes the parents of the copy
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    computed = getattr(wrapper, "_metadata", None)
    if isinstance(computed, dict):  # (a private detail of libcst; otherwise libcst computes)
        computed[ParentNodeProvider] = parents
    return wrapper


def _parents(module: cst.Module) -> dict[cst.CSTNode, cst.CSTNode] | None:
    """child -> parent for every node under ``module``; None when a node appears twice."""
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    pending: list[cst.CSTNode] = [module]
    while pending:
        node = pending.pop()
        for name in _child_fields(type(node)):
            value = getattr(node, name)
            children = value if isinstance(value, (tuple, list)) else (value,)
            for child in children:
                if isinstance(child, cst.CSTNode):
                    if child in parents:
                        return None
                    parents[child] = node
                    pending.append(child)
    return parents


@functools.cache
def _child_fields(node_type: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(node_type))
