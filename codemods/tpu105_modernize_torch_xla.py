"""TPU105: replace deprecated and removed torch_xla spellings with their 2.9 equivalents."""

from __future__ import annotations

import libcst as cst

from ._base import TORCH_XLA, XR, ImportSpec, Invalid, Safety, TpuCodemod, Valid

XLA_MODEL = "torch_xla.core.xla_model"
PARALLEL_LOADER = "torch_xla.distributed.parallel_loader"

# Old qualified name -> (new callee as written, import it needs). Arguments are kept.
RENAMES: dict[str, tuple[str, ImportSpec]] = {
    f"{XLA_MODEL}.xla_device": ("torch_xla.device", TORCH_XLA),
    f"{XLA_MODEL}.mark_step": ("torch_xla.sync", TORCH_XLA),
    f"{XLA_MODEL}.xrt_world_size": ("xr.world_size", XR),
    f"{XLA_MODEL}.get_ordinal": ("xr.global_ordinal", XR),
    f"{XLA_MODEL}.get_local_ordinal": ("xr.local_ordinal", XR),
}
# Keyword arguments the new callee no longer accepts (ignored by the old one already).
DROPPED_KEYWORDS: dict[str, frozenset[str]] = {
    f"{XLA_MODEL}.xla_device": frozenset({"devkind"}),
}


class ModernizeTorchXla(TpuCodemod):
    """
    What it does
        Rewrites torch_xla calls that 2.9 deprecates or no longer has:
        ``xm.xla_device()`` -> ``torch_xla.device()``, ``xm.mark_step()`` -> ``torch_xla.sync()``,
        ``xm.xrt_world_size()`` -> ``xr.world_size()``, ``xm.get_ordinal()`` ->
        ``xr.global_ordinal()``, ``xm.get_local_ordinal()`` -> ``xr.local_ordinal()``, and
        ``pl.ParallelLoader(loader, [device]).per_device_loader(device)`` ->
        ``pl.MpDeviceLoader(loader, device)``. Imports that become unused are removed.

    Why
        ``xla_device`` and ``mark_step`` warn on every call since 2.8; ``xrt_world_size`` and
        ``get_ordinal`` were removed in 2.7, so old ports crash with AttributeError on 2.9.
        ``MpDeviceLoader`` is the one-call form of the ParallelLoader idiom.

    Example
        Before::

            import torch_xla.core.xla_model as xm
            device = xm.xla_device()
            xm.mark_step()

        After::

            import torch_xla
            device = torch_xla.device()
            torch_xla.sync()
    """

    CODE = "TPU105"
    NAME = "modernize-torch-xla"
    SUMMARY = "Replace deprecated/removed torch_xla 1.x-2.8 APIs with torch_xla 2.9 idioms"
    SAFETY = Safety.SAFE
    TRIGGERS = ("torch_xla",)

    VALID = [
        Valid(
            "import torch_xla\nimport torch_xla.runtime as xr\n"
            "device = torch_xla.device()\ntorch_xla.sync()\nn = xr.world_size()\n",
            why="already 2.9 idioms",
        ),
        Valid(
            "class Fake:\n    def mark_step(self):\n        pass\n\nxm = Fake()\nxm.mark_step()\n",
            why="a local object with a look-alike method is not torch_xla",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\nxm.mark_step()\n",
            "import torch_xla\n\ndevice = torch_xla.device()\ntorch_xla.sync()\n",
        ),
        Invalid(
            "import torch_xla.core.xla_model as xm\n\n"
            "rank = xm.get_ordinal()\nworld = xm.xrt_world_size()\nxm.optimizer_step(opt)\n",
            "import torch_xla.core.xla_model as xm\nimport torch_xla.runtime as xr\n\n"
            "rank = xr.global_ordinal()\nworld = xr.world_size()\nxm.optimizer_step(opt)\n",
        ),
        Invalid(
            "from torch_xla.core.xla_model import xla_device\n\ndev = xla_device(devkind='TPU')\n",
            "import torch_xla\n\ndev = torch_xla.device()\n",
        ),
        Invalid(
            "import torch_xla.core.xla_model as xm\n"
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "device = xm.xla_device()\n"
            "loader = pl.ParallelLoader(train_loader, [device]).per_device_loader(device)\n",
            "import torch_xla\n"
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "device = torch_xla.device()\n"
            "loader = pl.MpDeviceLoader(train_loader, device)\n",
        ),
    ]

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        per_device = self._per_device_loader(original_node, updated_node)
        if per_device is not None:
            return per_device
        for old_name, (new_callee, spec) in RENAMES.items():
            if self.is_name(original_node.func, old_name):
                dropped = DROPPED_KEYWORDS.get(old_name, frozenset())
                args = [
                    arg
                    for arg in updated_node.args
                    if not (arg.keyword and arg.keyword.value in dropped)
                ]
                if args:
                    args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                self.require_import(spec)
                self.release_binding(original_node.func)
                self.record_rewrite()
                return updated_node.with_changes(
                    func=cst.parse_expression(new_callee), args=args
                )
        return updated_node

    def _per_device_loader(self, original: cst.Call, updated: cst.Call) -> cst.Call | None:
        """``pl.ParallelLoader(loader, [dev]).per_device_loader(dev)`` -> ``pl.MpDeviceLoader``."""
        func = original.func
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value == "per_device_loader"
            and isinstance(func.value, cst.Call)
            and self.is_name(func.value.func, f"{PARALLEL_LOADER}.ParallelLoader")
        ):
            return None
        inner = updated.func.value  # type: ignore[union-attr]
        if len(inner.args) < 2 or inner.args[0].keyword or len(updated.args) != 1:
            return None
        loader, devices, extra = inner.args[0], inner.args[1], list(inner.args[2:])
        if not (isinstance(devices.value, cst.List) and len(devices.value.elements) == 1):
            return None
        if isinstance(inner.func, cst.Attribute):  # pl.ParallelLoader -> pl.MpDeviceLoader
            new_func: cst.BaseExpression = inner.func.with_changes(attr=cst.Name("MpDeviceLoader"))
        else:  # from ... import ParallelLoader
            new_func = cst.Name("MpDeviceLoader")
            self.require_import(ImportSpec(PARALLEL_LOADER, "MpDeviceLoader"))
            self.release_binding(inner.func)
        device = updated.args[0].with_changes(
            comma=devices.comma if extra else cst.MaybeSentinel.DEFAULT
        )
        self.record_rewrite()
        return cst.Call(func=new_func, args=[loader, device, *extra])
