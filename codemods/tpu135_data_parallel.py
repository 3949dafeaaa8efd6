"""TPU135: nn.DataParallel is removed, with a finding (split off from TPU108)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ParentNodeProvider, ScopeProvider

from migrate.fastcst.facts import FileFacts
from ._base import FindingDoc, Invalid, Safety, TpuCodemod, Valid, walk_all
from ._distributed import LaysOutRebuiltCalls
from ._statements import AppliesStatementEdits

DATA_PARALLEL = (
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
)


class DataParallel(LaysOutRebuiltCalls, AppliesStatementEdits, TpuCodemod):
    """
    What it does
        ``nn.DataParallel(model, ...)`` becomes ``model``, and ``model = nn.DataParallel(model)``
        is removed, with a TPU203 finding (on the statement after it when the statement goes).
        Split off from TPU108, which still names it.

        When the wrapped model is a name assigned the wrapper (``net = nn.DataParallel(net)``,
        ``net = nn.DataParallel(Net()).to(device)``) and a later line of the file calls
        ``net.load_state_dict(...)`` on that name (in its scope, or as a global in a function),
        that call gets a TPU207 finding: a checkpoint the original saved from
        ``net.state_dict()`` has keys that start with ``module.``, which the bare model does not
        accept.

        ``net.module`` (the wrapped model, as DataParallel code reaches it:
        ``net.module.state_dict()``) becomes ``net`` wherever ``net`` may hold the wrapper.

    Why
        ``DataParallel`` (one process driving several GPUs with threads) has no XLA equivalent:
        data parallelism on TPU is one process per device (``torch_xla.launch``) or SPMD.
        Without the wrapper the model trains on one device, which is what the finding says.

    Example
        Before::

            net = torch.nn.DataParallel(Net(), device_ids=[0, 1]).to(device)

        After::

            # TODO(tpu-migrate): TPU203 nn.DataParallel removed: data parallelism on TPU is ...
            net = Net().to(device)
    """

    CODE = "TPU135"
    NAME = "data-parallel"
    SUMMARY = "nn.DataParallel(model) -> model, with a finding: XLA has no one-process multi-device"
    SAFETY = Safety.SEMANTIC
    FINDINGS = {
        "TPU203": FindingDoc(
            "nn.DataParallel removed: data parallelism on TPU is one process per device "
            "(torch_xla.launch) or SPMD",
            why="nn.DataParallel drives several GPUs from one process with threads and splits "
            "each batch between them; torch_xla has no such mode. Without it the script trains "
            "on one device, with the whole batch on that device.",
            what_to_do="For several devices start one process per device with "
            "torch_xla.launch(_mp_fn), give each a DistributedSampler so that it sees its own "
            "part of the data, and let xm.optimizer_step(opt) all-reduce the gradients; or "
            "shard with SPMD. Check the batch size and learning rate: each process now has "
            "its own batch.",
        ),
        "TPU207": FindingDoc(
            "checkpoints the original saved from its nn.DataParallel model have keys starting "
            "with 'module.': strip the prefix before load_state_dict",
            why="nn.DataParallel keeps the model as its 'module' attribute, so its state_dict "
            "names every entry 'module.<name>'. Without the wrapper, load_state_dict of a "
            "checkpoint written by the original script fails with missing and unexpected keys.",
            what_to_do="Strip the prefix from the loaded state dict first: "
            "torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state, 'module.') "
            "(in place; a state dict without the prefix, as the migrated script saves, is left "
            "as it is), then net.load_state_dict(state).",
        ),
    }
    TRIGGERS = ("DataParallel",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*DATA_PARALLEL)

    VALID = [
        Valid(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "model = DDP(model)\n",
            why="DistributedDataParallel is one process per device already",
        ),
        Valid(
            "class DataParallel:\n    def __init__(self, module):\n        self.module = module\n\n\n"
            "model = DataParallel(model)\n",
            why="a class of the user's own",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n"
            "net = torch.nn.DataParallel(Net(), device_ids=[0, 1]).to(device)\n"
            "x = torch.zeros(1)\n",
            "import torch\n\n"
            "# TODO(tpu-migrate): TPU203 nn.DataParallel removed: data parallelism on TPU is one "
            "process per device (torch_xla.launch) or SPMD\n"
            "net = Net().to(device)\nx = torch.zeros(1)\n",
            findings=["TPU203"],
        ),
        Invalid(
            "import torch\n\n\n"
            "def save(path):\n"
            "    torch.save(model.module.state_dict(), path)\n\n\n"
            "model = Net()\n"
            "if torch.cuda.device_count() > 1:\n"
            "    model = torch.nn.DataParallel(model)\n"
            "inner = model.module if hasattr(model, 'module') else model\n"
            "model.module = model.module.half()\n"
            "other.module.eval()\n",
            "import torch\n\n\n"
            "def save(path):\n"
            "    torch.save(model.state_dict(), path)\n\n\n"
            "model = Net()\n"
            "# TODO(tpu-migrate): TPU203 nn.DataParallel removed: data parallelism on TPU is one "
            "process per device (torch_xla.launch) or SPMD\n"
            "inner = model if hasattr(model, 'module') else model\n"
            "model.module = model.half()\n"
            "other.module.eval()\n",
            findings=["TPU203"],
            why="model.module reaches the wrapped model: without the wrapper it is model itself, "
            "in a function defined above the wrap too; an assignment to it and another "
            "object's .module stay",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._flagged_loads: set[int] = set()  # id(original load_state_dict call)
        self._load_calls: list[cst.Call] | None = None
        self._tree: cst.Module | None = None
        self._module_reads: set[int] = set()  # id(original ``net.module``) to unwrap

    def visit_Module(self, node: cst.Module) -> None:
        self._tree = node
        wrapped = [
            name
            for call in walk_all(node)
            if isinstance(call, cst.Call) and self.is_name(call.func, *DATA_PARALLEL)
            for name in [self._assigned_name(call)]
            if name is not None
        ]
        if wrapped:
            self._module_reads = {
                id(attribute)
                for attribute in walk_all(node)
                if isinstance(attribute, cst.Attribute)
                and attribute.attr.value == "module"
                and isinstance(attribute.value, cst.Name)
                and any(self._reads_binding_of(attribute.value, name) for name in wrapped)
                and not self._is_written(attribute)
            }

    def _is_written(self, attribute: cst.Attribute) -> bool:
        """``net.module = ...`` (or ``+=``, ``del``): not a read of the wrapped model."""
        parent = self.get_metadata(ParentNodeProvider, attribute, None)
        if isinstance(parent, cst.AssignTarget) or isinstance(parent, cst.Del):
            return True
        return isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is attribute

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        if id(original_node) not in self._module_reads:
            return updated_node
        self.record_rewrite()
        return updated_node.value

    def rebuilt_call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if self.is_name(original.func, *DATA_PARALLEL) and not self._is_wrapped_self_assignment(
            original
        ):
            self._flag_data_parallel(original, original)
            model = self._assigned_name(original)
            if model is not None:
                self._flag_later_loads(model)
            return updated.args[0].value if updated.args else updated
        return updated

    def statement_left(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        removed: set[int] = set()
        for old in original.body:
            if isinstance(old, cst.Assign) and self._is_data_parallel_self_wrap(old):
                removed.add(id(old))
                self._flag_data_parallel(old.value, self._next_statement(original))
                if isinstance(old.targets[0].target, cst.Name):
                    self._flag_later_loads(old.targets[0].target)
        return self.edits.remove_small_statements(original, updated, removed)

    def _is_data_parallel_self_wrap(self, assign: cst.Assign) -> bool:
        value = assign.value
        return (
            isinstance(value, cst.Call)
            and self.is_name(value.func, *DATA_PARALLEL)
            and len(assign.targets) == 1
            and bool(value.args)
            and value.args[0].keyword is None
            and assign.targets[0].target.deep_equals(value.args[0].value)
        )

    def _is_wrapped_self_assignment(self, call: cst.Call) -> bool:
        parent = self.get_metadata(ParentNodeProvider, call, None)
        return isinstance(parent, cst.Assign) and self._is_data_parallel_self_wrap(parent)

    def _flag_data_parallel(self, call: cst.Call, marker_at: cst.CSTNode) -> None:
        self.release_binding(call.func)
        self.record_rewrite()
        self.flag(marker_at, "TPU203", self.finding_doc("TPU203").summary)

    def _assigned_name(self, call: cst.Call) -> cst.Name | None:
        """``net`` of ``net = call`` or ``net = call.to(device)`` (methods called on it)."""
        value: cst.CSTNode = call
        parent = self.get_metadata(ParentNodeProvider, value, None)
        while isinstance(parent, cst.Attribute) and parent.value is value:
            method_call = self.get_metadata(ParentNodeProvider, parent, None)
            if not (isinstance(method_call, cst.Call) and method_call.func is parent):
                return None
            value = method_call
            parent = self.get_metadata(ParentNodeProvider, value, None)
        if (
            isinstance(parent, cst.Assign)
            and parent.value is value
            and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)
        ):
            return parent.targets[0].target
        return None

    def _flag_later_loads(self, model: cst.Name) -> None:
        """TPU207 on each ``model.load_state_dict(...)`` below the wrap whose ``model`` is the
        name the wrap assigns (read in its own scope, or as a global in a function)."""
        wrapped_at = self.position(model)[0]
        for call in self._load_state_dict_calls():
            receiver = call.func.value  # type: ignore[attr-defined]
            if (
                receiver.value == model.value
                and self.position(call)[0] > wrapped_at
                and id(call) not in self._flagged_loads
                and self._reads_binding_of(receiver, model)
            ):
                self._flagged_loads.add(id(call))
                self.flag(call, "TPU207", self.finding_doc("TPU207").summary)

    def _load_state_dict_calls(self) -> list[cst.Call]:
        """Every ``name.load_state_dict(...)`` of the file, found once."""
        if self._load_calls is None and self._tree is not None:
            self._load_calls = [
                node
                for node in walk_all(self._tree)
                if isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "load_state_dict"
                and isinstance(node.func.value, cst.Name)
            ]
        return self._load_calls or []

    def _reads_binding_of(self, name: cst.Name, target: cst.Name) -> bool:
        """``name`` is read where ``target``'s assignment is one of the bindings it can mean."""
        scope = self.get_metadata(ScopeProvider, name, None)
        if scope is None:
            return False
        return any(assignment.node is target for assignment in scope[name.value])

    def _next_statement(self, statement: cst.CSTNode) -> cst.CSTNode:
        """Where a marker for ``statement`` goes when ``statement`` itself is removed."""
        block = self.get_metadata(ParentNodeProvider, statement)
        body = list(block.body)
        index = next(i for i, s in enumerate(body) if s is statement)
        if index + 1 < len(body):
            return body[index + 1]
        if isinstance(block, cst.Module):
            return statement
        return self.get_metadata(ParentNodeProvider, block)
