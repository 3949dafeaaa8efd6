"""What the mixed-precision rules share: TPU107 (autocast on XLA in bf16) and TPU137 (the
GradScaler removed), split from one rule."""

from __future__ import annotations

import libcst as cst


def is_training_device_type(node: cst.BaseExpression) -> bool:
    """``"cuda"``, or a device (type) held in a variable: the training device, XLA after the
    migration. Other literals (``"cpu"``, ``"xla"``) are deliberate."""
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value == "cuda"
    return isinstance(node, (cst.Name, cst.Attribute))
