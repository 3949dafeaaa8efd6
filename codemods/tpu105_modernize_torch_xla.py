"""TPU105: replace deprecated and removed torch_xla spellings with their 2.9 equivalents."""

from __future__ import annotations

import libcst as cst

from libcst.metadata import ParentNodeProvider, ScopeProvider

from migrate.fastcst.facts import FileFacts
from ._base import TORCH_XLA, XR, ImportSpec, Invalid, Safety, TpuCodemod, Valid, code_of

XLA_MODEL = "torch_xla.core.xla_model"
PARALLEL_LOADER = "torch_xla.distributed.parallel_loader"
XMP_SPAWN = "torch_xla.distributed.xla_multiprocessing.spawn"
# xmp.spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn")
SPAWN_PARAMETERS = ("fn", "args", "nprocs", "join", "daemon", "start_method")
SPAWN_DEFAULTS = {"join": "True", "daemon": "False"}

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
        ``pl.MpDeviceLoader(loader, device)`` (also when the ParallelLoader is kept in a variable
        that is only used for ``per_device_loader``), and ``xmp.spawn(fn, args, nprocs=n)`` ->
        ``torch_xla.launch(fn, args=args, debug_single_process=n == 1)`` (``nprocs`` other than
        None or 1 is a ValueError in 2.9 anyway; ``start_method`` is kept). Imports that become
        unused are removed.

    Why
        ``xla_device`` and ``mark_step`` warn on every call since 2.8; ``xrt_world_size`` and
        ``get_ordinal`` were removed in 2.7, so old ports crash with AttributeError on 2.9.
        ``MpDeviceLoader`` is the one-call form of the ParallelLoader idiom, and the examples moved
        from ``xmp.spawn`` to ``torch_xla.launch`` in 2.5 (it also handles torchrun).

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

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses("torch_xla")

    VALID = [
        Valid(
            "import torch_xla\nimport torch_xla.runtime as xr\n"
            "device = torch_xla.device()\ntorch_xla.sync()\nn = xr.world_size()\n",
            why="already 2.9 idioms",
        ),
        Valid(
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "para_loader = pl.ParallelLoader(loader, [device])\n"
            "print(len(para_loader))\nit = para_loader.per_device_loader(device)\n",
            why="the ParallelLoader object is used for more than per_device_loader",
        ),
        Valid(
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, args=(), join=False)\n",
            why="torch_xla.launch has no join=False; left for a human",
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
        Invalid(
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "for epoch in range(3):\n"
            "    para_loader = pl.ParallelLoader(train_loader, [device])\n"
            "    train_loop_fn(para_loader.per_device_loader(device), epoch)\n",
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "for epoch in range(3):\n"
            "    para_loader = pl.MpDeviceLoader(train_loader, device)\n"
            "    train_loop_fn(para_loader, epoch)\n",
        ),
        Invalid(
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "if __name__ == '__main__':\n"
            "    xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS.num_cores, start_method='fork')\n",
            "import torch_xla\n\n"
            "if __name__ == '__main__':\n"
            "    torch_xla.launch(_mp_fn, args=(FLAGS,), start_method='fork', "
            "debug_single_process=FLAGS.num_cores == 1)\n",
        ),
        Invalid(
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "xmp.spawn(_mp_fn, (FLAGS,), 1)\nxmp.spawn(_mp_fn)\n",
            "import torch_xla\n\n"
            "torch_xla.launch(_mp_fn, args=(FLAGS,), debug_single_process=True)\n"
            "torch_xla.launch(_mp_fn)\n",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._stored_loaders: set[int] = set()  # ParallelLoader(...) calls kept in a variable
        self._per_device_calls: set[int] = set()  # var.per_device_loader(dev) calls on those

    def visit_Assign(self, node: cst.Assign) -> None:
        """Find ``var = pl.ParallelLoader(loader, [dev])`` whose ``var`` only feeds
        ``var.per_device_loader(dev)``: both can become one MpDeviceLoader."""
        value = node.value
        if not (
            len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and isinstance(value, cst.Call)
            and self.is_name(value.func, f"{PARALLEL_LOADER}.ParallelLoader")
            and _single_device_list(value)
        ):
            return
        calls = self._per_device_uses(node.targets[0].target)
        if calls is not None:
            self._stored_loaders.add(id(value))
            self._per_device_calls.update(id(call) for call in calls)

    def _per_device_uses(self, name: cst.Name) -> list[cst.Call] | None:
        scope = self.get_metadata(ScopeProvider, name, None)
        if scope is None:
            return None
        calls = []
        for access in scope.accesses[name.value]:
            attribute = self.get_metadata(ParentNodeProvider, access.node, None)
            call = self.get_metadata(ParentNodeProvider, attribute, None) if attribute else None
            if not (
                isinstance(attribute, cst.Attribute)
                and attribute.attr.value == "per_device_loader"
                and isinstance(call, cst.Call)
                and call.func is attribute
                and len(call.args) == 1
            ):
                return None
            calls.append(call)
        return calls

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if id(original_node) in self._per_device_calls:
            self.record_rewrite()
            return updated_node.func.value  # type: ignore[union-attr]
        if id(original_node) in self._stored_loaders:
            self.record_rewrite()
            return self._mp_device_loader(
                updated_node, updated_node.args[1].value.elements[0].value
            )
        per_device = self._per_device_loader(original_node, updated_node)
        if per_device is not None:
            return per_device
        if self.is_name(original_node.func, XMP_SPAWN):
            return self._launch(original_node, updated_node)
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
                return updated_node.with_changes(func=cst.parse_expression(new_callee), args=args)
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
        if not _single_device_list(inner) or len(updated.args) != 1:
            return None
        self.record_rewrite()
        return self._mp_device_loader(inner, updated.args[0].value)

    def _mp_device_loader(self, parallel_loader: cst.Call, device: cst.BaseExpression) -> cst.Call:
        """``ParallelLoader(loader, [dev], **kw)`` -> ``MpDeviceLoader(loader, device, **kw)``."""
        loader, devices, *extra = parallel_loader.args
        if isinstance(parallel_loader.func, cst.Attribute):  # pl.ParallelLoader
            func: cst.BaseExpression = parallel_loader.func.with_changes(
                attr=cst.Name("MpDeviceLoader")
            )
        else:  # from ... import ParallelLoader
            func = cst.Name("MpDeviceLoader")
            self.require_import(ImportSpec(PARALLEL_LOADER, "MpDeviceLoader"))
            self.release_binding(parallel_loader.func)
        device_arg = devices.with_changes(
            value=device, comma=devices.comma if extra else cst.MaybeSentinel.DEFAULT
        )
        return parallel_loader.with_changes(func=func, args=[loader, device_arg, *extra])

    def _launch(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``xmp.spawn(fn, args, nprocs, ...)`` -> ``torch_xla.launch(fn, args=..., ...)``."""
        named: dict[str, cst.Arg] = {}
        for index, arg in enumerate(updated.args):
            if arg.star:
                return updated
            key = arg.keyword.value if arg.keyword else SPAWN_PARAMETERS[index]
            named[key] = arg
        for key, default in SPAWN_DEFAULTS.items():
            if key in named and code_of(named[key].value) != default:
                return updated  # launch() cannot express it: leave it for a human
        args = [named["fn"].value]
        keywords = [("args", named["args"].value)] if "args" in named else []
        if "start_method" in named:
            keywords.append(("start_method", named["start_method"].value))
        nprocs = named.get("nprocs")
        if nprocs is not None and not _is_none(nprocs.value):
            single = (
                cst.Name("True")
                if _is_one(nprocs.value)
                else cst.Comparison(
                    nprocs.value, [cst.ComparisonTarget(cst.Equal(), cst.Integer("1"))]
                )
            )
            keywords.append(("debug_single_process", single))
        self.require_import(TORCH_XLA)
        self.release_binding(original.func)
        self.record_rewrite()
        new_args = [cst.Arg(value) for value in args] + [
            cst.Arg(value, keyword=cst.Name(key), equal=_EQUAL) for key, value in keywords
        ]
        return cst.Call(func=cst.parse_expression("torch_xla.launch"), args=_with_commas(new_args))


_EQUAL = cst.AssignEqual(
    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
)


def _with_commas(args: list[cst.Arg]) -> list[cst.Arg]:
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [arg.with_changes(comma=comma) for arg in args[:-1]] + args[-1:]


def _single_device_list(call: cst.Call) -> bool:
    """``ParallelLoader(loader, [device], ...)``: the only form MpDeviceLoader can replace."""
    if len(call.args) < 2 or call.args[0].keyword or call.args[1].keyword:
        return False
    devices = call.args[1].value
    return isinstance(devices, cst.List) and len(devices.elements) == 1


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _is_one(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer) and node.evaluated_value == 1
