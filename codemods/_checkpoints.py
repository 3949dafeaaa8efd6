"""What the checkpoint rules share (TPU109 saves, TPU138 loads): the calls they act on, and what a
name holds, read from the assignments of its own scope (a state dict kept in ``state``, a CUDA
location kept in ``loc``, a model put on the device in ``model``)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ParentNodeProvider, ScopeProvider

SAVE = "torch.save"
LOAD = "torch.load"


class FollowsAssignments:
    """Mixin for a rule (listed before ``TpuCodemod`` in its bases): a node's parent, and the
    values assigned to a name in its scope."""

    def parent_of(self, node: cst.CSTNode | None) -> cst.CSTNode | None:
        try:
            return self.get_metadata(ParentNodeProvider, node)  # type: ignore[attr-defined]
        except KeyError:
            return None

    def assigned_values(self, name: cst.Name) -> list[cst.BaseExpression]:
        """Values assigned to ``name`` in its own scope (``x = value`` statements)."""
        try:
            scope = self.get_metadata(ScopeProvider, name)  # type: ignore[attr-defined]
        except KeyError:
            return []
        values = []
        for assignment in scope.assignments[name.value] if scope is not None else ():
            target = getattr(assignment, "node", None)
            parent = self.parent_of(target) if isinstance(target, cst.Name) else None
            assign = self.parent_of(parent) if isinstance(parent, cst.AssignTarget) else None
            if isinstance(assign, cst.Assign):
                values.append(assign.value)
        return values
