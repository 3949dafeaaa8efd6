"""TPU131: rank and world size come from torch_xla.runtime (split off from TPU108)."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import XR, Invalid, Safety, TpuCodemod, Valid
from ._distributed import env_root, literal_text, string_value

# torch.distributed query (no arguments) -> torch_xla.runtime call.
RUNTIME_QUERIES: dict[str, str] = {
    "torch.distributed.get_rank": "xr.global_ordinal()",
    "torch.distributed.get_world_size": "xr.world_size()",
}
# Environment variable set by torchrun -> (torch_xla.runtime call, defaults that mean the same).
ENV_QUERIES: dict[str, tuple[str, frozenset[str]]] = {
    "RANK": ("xr.global_ordinal()", frozenset({"0"})),
    "LOCAL_RANK": ("xr.local_ordinal()", frozenset({"0"})),
    "WORLD_SIZE": ("xr.world_size()", frozenset({"1"})),
}


class RuntimeRanks(TpuCodemod):
    """
    What it does
        ``dist.get_rank()`` / ``dist.get_world_size()`` (of the default group) and the torchrun
        environment read as a number, ``int(os.environ["RANK"])``,
        ``int(os.environ.get("WORLD_SIZE", 1))``, ``int(os.getenv("LOCAL_RANK", "0"))``, become
        ``xr.global_ordinal()`` / ``xr.world_size()`` / ``xr.local_ordinal()`` (``import
        torch_xla.runtime as xr``). An environment default other than the single-process value
        (``LOCAL_RANK`` default ``-1`` meaning "not distributed") is left alone, and so is a
        query of a sub-group. Split off from TPU108, which still names it.

    Why
        Under ``torch_xla.launch`` the torchrun variables are not set at all: PJRT starts one
        process per device and its runtime knows each process's ordinal and the world size.

    Semantics changes
        A script started with plain ``python`` runs as every TPU device of the host rather
        than as a world of one.

    Example
        Before::

            rank = int(os.environ["RANK"])
            world_size = dist.get_world_size()

        After::

            import torch_xla.runtime as xr

            rank = xr.global_ordinal()
            world_size = xr.world_size()
    """

    CODE = "TPU131"
    NAME = "runtime-ranks"
    SUMMARY = (
        "dist.get_rank()/get_world_size() and torchrun's RANK/WORLD_SIZE/LOCAL_RANK -> xr calls"
    )
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("get_rank", "get_world_size", "RANK", "WORLD_SIZE")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*RUNTIME_QUERIES) or (
            facts.uses("os") and facts.has_string(lambda s: s in ENV_QUERIES)
        )

    VALID = [
        Valid(
            'import os\n\nlocal_rank = int(os.environ.get("LOCAL_RANK", -1))\n'
            "distributed = local_rank != -1\n",
            why="-1 means 'not launched distributed'; the runtime would always say 0",
        ),
        Valid(
            "import torch.distributed as dist\n\nrank = dist.get_rank(group=subgroup)\n",
            why="a rank within a sub-group is not the global ordinal",
        ),
        Valid(
            'import os\n\nrank = os.environ["RANK"]\nprint("rank", rank)\n',
            why="the string value is not converted to an int: not a rank computation to port",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch.distributed as dist\n\n\ndef info(group):\n"
            '    return {"backend": f"{dist.get_backend(group)}", '
            '"world_size": f"{dist.get_world_size()}", "group": str(group)}\n',
            "import torch.distributed as dist\nimport torch_xla.runtime as xr\n\n\n"
            'def info(group):\n    return {"backend": f"{dist.get_backend(group)}", '
            '"world_size": f"{xr.world_size()}", "group": str(group)}\n',
            why="a line still long after the rewrite: the new call has no argument to wrap "
            "(torch's distributed/c10d_logger.py crashed TPU108)",
        ),
    ]

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        func = original_node.func
        if self.is_name(func, *RUNTIME_QUERIES) and not original_node.args:
            (qname,) = self.qualified_names(func) & set(RUNTIME_QUERIES)
            return self._runtime_call(RUNTIME_QUERIES[qname])
        env = self._env_query(original_node)
        if env is not None:
            self.release_binding(env_root(original_node))
            return self._runtime_call(env)
        return updated_node

    def _runtime_call(self, spelling: str) -> cst.BaseExpression:
        self.require_import(XR)
        self.record_rewrite()
        return cst.parse_expression(spelling)

    def _env_query(self, call: cst.Call) -> str | None:
        if not (
            isinstance(call.func, cst.Name) and call.func.value == "int" and len(call.args) == 1
        ):
            return None
        inner = call.args[0].value
        key: cst.BaseExpression | None = None
        default: cst.BaseExpression | None = None
        if isinstance(inner, cst.Subscript) and self.is_name(inner.value, "os.environ"):
            if len(inner.slice) == 1 and isinstance(inner.slice[0].slice, cst.Index):
                key = inner.slice[0].slice.value
        elif isinstance(inner, cst.Call) and (
            self.is_name(inner.func, "os.getenv")
            or (
                isinstance(inner.func, cst.Attribute)
                and inner.func.attr.value == "get"
                and self.is_name(inner.func.value, "os.environ")
            )
        ):
            if 1 <= len(inner.args) <= 2 and all(a.keyword is None for a in inner.args):
                key = inner.args[0].value
                default = inner.args[1].value if len(inner.args) == 2 else None
        variable = string_value(key) if key is not None else None
        if variable not in ENV_QUERIES:
            return None
        spelling, neutral = ENV_QUERIES[variable]
        if default is not None and literal_text(default) not in neutral:
            return None
        return spelling
