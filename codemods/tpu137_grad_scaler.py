"""TPU137: the GradScaler goes with its uses: bf16 needs no loss scaling (split off from TPU107)."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import ParentNodeProvider, ScopeProvider

from migrate.fastcst.facts import FileFacts
from ._amp import is_training_device_type
from ._base import FindingDoc, Invalid, Safety, TpuCodemod, Valid, code_of, walk_all
from ._signatures import (
    argument_for,
    branch_statements,
    first_argument,
    is_self_attribute,
    parameter_for,
    without_bare_star,
    without_dropped,
)
from ._statements import AppliesStatementEdits, Replacement

FINDING = "TPU271"

# GradScaler(init_scale, ...) / torch.amp.GradScaler(device="cuda", init_scale, ...)
CUDA_SCALERS = ("torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler")
DEVICE_SCALERS = ("torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.GradScaler")

# scaler.<method>(...) as a statement of its own: nothing is left to do without a scaler.
DROPPED_METHODS = frozenset({"unscale_", "update", "load_state_dict"})
# Tests that are false exactly when there is no scaler: ``if scaler:`` keeps the else branch.
SCALER_TRUTH_TESTS = {"is not None": True, "is None": False}


@dataclass
class ScalerPlan:
    """What happens to the uses of the GradScalers in one file (ids of original nodes)."""

    unwrapped_scales: set[int] = field(default_factory=set)  # scaler.scale(x) -> x
    plain_steps: set[int] = field(default_factory=set)  # scaler.step(opt) -> opt.step()
    dropped_entries: set[int] = field(default_factory=set)  # "scaler": scaler.state_dict()
    # if scaler is not None: ... else: ... -> True: the branch without a scaler is ``orelse``
    decided_ifs: dict[int, bool] = field(default_factory=dict)
    dropped_params: set[int] = field(default_factory=set)  # def f(x, scaler) -> def f(x)


@dataclass(frozen=True)
class Handoff:
    """A scaler passed to a function of the same file: the parameter that receives it and the
    argument of every call of the function that fills that parameter."""

    parameter: cst.Param
    arguments: tuple[cst.Arg, ...]


class GradScalerRemoval(AppliesStatementEdits, TpuCodemod):
    """
    What it does
        A CUDA ``GradScaler`` (``torch.cuda.amp.GradScaler(...)``, ``torch.amp.GradScaler("cuda")``,
        ``torch.GradScaler``; also ``GradScaler(enabled=args.amp)``, ``GradScaler() if amp else
        None`` and a ``scaler = None`` default) is removed with its uses:

        - ``scaler.scale(loss).backward()`` -> ``loss.backward()``, ``scaler.step(opt)`` ->
          ``opt.step()`` (TPU102 then makes it ``xm.optimizer_step(opt)``),
          ``scaler.unscale_(opt)`` and ``scaler.update()`` are removed, and
          ``if scaler is not None: <amp path> else: <plain path>`` keeps the plain path.
        - Checkpoints: a ``"scaler": scaler.state_dict()`` entry (dict literal, ``dict(...)``
          keyword or ``ckpt["scaler"] = scaler.state_dict()``) is no longer saved, and
          ``scaler.load_state_dict(...)`` on resume is removed, together with an
          ``if "scaler" in ckpt:`` around it. Old checkpoints that carry a "scaler" entry still
          resume: nothing reads the entry any more.
        - A scaler passed (positionally or by keyword) to a function of the same file, a plain
          ``def`` or a method called as ``self.f(...)``, is followed into it: the uses of the
          parameter are unwrapped as above, the parameter leaves the signature and the argument
          every call. Only when every reference to the function is a call that passes this very
          scaler in that parameter (no ``*args``, no decorator, not passed on as a callback):
          other callers, in this file or not, could otherwise pass something else.

        A scaler used in any other way (passed to a function defined elsewhere,
        ``scaler.get_scale()`` logged) is left as it is with a TPU271 finding: on XLA it
        disables itself (it checks for CUDA), so the script still runs, but its ``scaler.step``
        hides the optimizer step from TPU102. Split off from TPU107, which still names it.

    Why
        TPUs do mixed precision in bfloat16 (TPU107), which has float32's exponent range:
        gradients do not underflow, so there is nothing for a loss scaler to do.

        Semantics changes: no loss scaling, so a step is never skipped for inf/nan gradients as
        GradScaler did (a diverging run now shows nan instead of silently skipping steps);
        checkpoints written after the migration have no "scaler" entry, so the unmigrated CUDA
        script cannot resume from them without removing its own ``scaler.load_state_dict``.

    Example
        Before::

            scaler = torch.cuda.amp.GradScaler(enabled=args.amp)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()

        After::

            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
    """

    CODE = "TPU137"
    NAME = "grad-scaler"
    SUMMARY = "GradScaler removed with its uses (scale, step, update, checkpoints): bf16 needs none"
    SAFETY = Safety.SEMANTIC
    NUMERICS = (
        "loss scaling is gone: no step is skipped for inf/nan gradients any more (a diverging "
        "run shows nan)"
    )
    TRIGGERS = ("GradScaler",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.mentions("GradScaler")

    FINDINGS = {
        FINDING: FindingDoc(
            "a GradScaler used in a way tpu-migrate cannot unwrap; remove it by hand",
            why="TPU mixed precision is bfloat16, which has float32's exponent range: losses do "
            "not underflow and need no scaling. GradScaler exists for CUDA float16; on XLA it "
            "either fails (CUDA-only scaler) or adds inf checks and scale updates that read "
            "values on the host every step.",
            what_to_do="Replace scaler.scale(loss).backward() with loss.backward(), "
            "scaler.step(opt) with opt.step(), delete scaler.update() and unscale_ calls, drop "
            "the scaler from checkpoints, and run the forward pass under "
            "torch.autocast('xla', dtype=torch.bfloat16).",
        )
    }

    VALID = [
        Valid(
            "import torch\n\nscaler = torch.amp.GradScaler('cpu')\n"
            "scaler.scale(loss).backward()\nscaler.step(opt)\nscaler.update()\n",
            why="a scaler on an explicit CPU device is not the CUDA one",
        ),
        Valid(
            "from sklearn.preprocessing import StandardScaler\n\nscaler = StandardScaler()\n"
            "x = scaler.fit_transform(x)\nscaler.scale(x)\n",
            why="another library's scaler with look-alike methods",
        ),
        Valid(
            "import torch\n\n\ndef train_step(x, scaler):\n"
            "    scaler.scale(model(x).sum()).backward()\n\n\n"
            "scaler = torch.amp.GradScaler('cpu')\ntrain_step(x, scaler)\n",
            why="a CPU scaler handed to a function of the file stays, and so does the parameter",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\nscaler = torch.amp.GradScaler('cuda', init_scale=2.0**14)\n"
            "loss = torch.nn.functional.mse_loss(y, target)\n"
            "scaler.scale(loss).backward(retain_graph=True)\nscaler.step(opt, closure)\n"
            "scaler.update()\n",
            "import torch\n\nloss = torch.nn.functional.mse_loss(y, target)\n"
            "loss.backward(retain_graph=True)\nopt.step(closure)\n",
            why="torch.amp spelling; step arguments go to the optimizer",
        ),
        Invalid(
            "import torch\n\nscaler = torch.GradScaler(device)\nscaler.scale(loss).backward()\n"
            "scaler.step(opt); scaler.update()\ntorch.save(model.state_dict(), path)\n",
            "import torch\n\nloss.backward()\nopt.step()\ntorch.save(model.state_dict(), path)\n",
            why="device held in a variable; a; b lines",
        ),
        Invalid(
            "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"
            "state = {'scaler': scaler.state_dict(), 'epoch': epoch}\n"
            "extra = dict(step=step, scaler=scaler.state_dict())\n"
            "state['amp'] = scaler.state_dict()\ntorch.save(state, path)\n",
            "import torch\n\nstate = {'epoch': epoch}\nextra = dict(step=step)\ntorch.save(state, path)\n",
        ),
        Invalid(
            "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"
            "train(model, loader, scaler)\n",
            "import torch\n\n"
            "# TODO(tpu-migrate): TPU271 this GradScaler is used in a way tpu-migrate cannot "
            "unwrap (line 4); bf16 needs no loss scaling: remove it by hand\n"
            "scaler = torch.cuda.amp.GradScaler()\ntrain(model, loader, scaler)\n",
            findings=[FINDING],
            why="a scaler handed to a function not defined in this file",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self.plan = ScalerPlan()
        self._removed_small: set[int] = set()  # scaler.update() in ``a; b`` lines

    # ----------------------------------------------------------------- planning
    def visit_Module(self, node: cst.Module) -> None:
        self._module = node
        for assignments, uses in self._scaler_groups(node):
            self._plan_scaler(assignments, uses)

    def _scaler_groups(self, module: cst.Module):
        """Each scaler variable: its assignment statements and the nodes that use it."""
        by_binding: dict[tuple, tuple[list, list]] = {}
        for statement, target, call in _scaler_assignments(self, module):
            key = self._binding_key(target)
            if key is None:
                continue
            by_binding.setdefault(key, ([], []))[0].append((statement, target, call))
        groups = []
        for key, (assignments, _) in by_binding.items():
            uses = self._uses_of(key, assignments)
            if uses is not None:
                groups.append((assignments, uses))
            else:
                self._keep(assignments, None)
        return groups

    def _binding_key(self, target: cst.BaseExpression):
        if isinstance(target, cst.Name):
            scope = self.get_metadata(ScopeProvider, target, None)
            return ("name", id(scope), target.value, scope) if scope is not None else None
        if is_self_attribute(target):
            owner = self._enclosing(target, cst.ClassDef)
            return ("self", id(owner), target.attr.value, owner) if owner is not None else None
        return None

    def _uses_of(self, key, assignments) -> list[cst.CSTNode] | None:
        """Nodes reading the scaler variable; None when the variable also holds other things."""
        kind, _, name, owner = key
        targets = {id(target) for _, target, _ in assignments}
        if kind == "self":
            found = [
                node
                for node in walk_all(owner)
                if is_self_attribute(node) and node.attr.value == name and id(node) not in targets
            ]
            stores = [node for node in found if self._is_store(node)]
            return None if stores else found
        uses: list[cst.CSTNode] = []
        for assignment in owner.assignments[name]:
            if id(getattr(assignment, "node", None)) not in targets:
                return None
            uses += [access.node for access in assignment.references]
        return list({id(node): node for node in uses}.values())

    def _is_store(self, node: cst.CSTNode) -> bool:
        parent = self.get_metadata(ParentNodeProvider, node, None)
        return isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)) and (
            getattr(parent, "target", None) is node
        )

    def _plan_scaler(self, assignments, uses) -> None:
        uses, handoffs = self._follow_handoffs(uses)
        decided, dropped = self._plan_if_tests(uses)
        plan = ScalerPlan()
        removed: list[cst.CSTNode] = []
        handed = {id(arg.value) for handoff in handoffs for arg in handoff.arguments}
        for handoff in handoffs:
            plan.dropped_params.add(id(handoff.parameter))
            plan.dropped_entries |= {id(arg) for arg in handoff.arguments}
        for use in uses:
            if self._inside(use, dropped) or id(use) in handed:
                continue
            if not self._plan_use(use, plan, removed):
                self._keep(assignments, use)
                return
        self.plan.unwrapped_scales |= plan.unwrapped_scales
        self.plan.plain_steps |= plan.plain_steps
        self.plan.dropped_entries |= plan.dropped_entries
        self.plan.decided_ifs.update(decided)
        self.plan.dropped_params |= plan.dropped_params
        for statement in removed:
            self.edits.remove(statement)
        for statement, _, call in assignments:
            self.edits.remove(statement)
            if call is not None:
                self.release_binding(call.func)
        self.record_rewrite(len(assignments))

    def _follow_handoffs(self, uses) -> tuple[list[cst.CSTNode], list[Handoff]]:
        """The uses of a scaler including those inside the functions of this file it is passed to
        (``train(model, scaler)`` -> the uses of ``train``'s parameter), and those handoffs. All
        or nothing: when one call of such a function passes anything but this scaler, the uses
        are returned as they are and the handoff stays an unknown use."""
        original = list(uses)
        uses = list(uses)
        handoffs: list[Handoff] = []
        followed: set[int] = set()
        for use in uses:  # grows while followed
            handoff = self._handoff(use)
            if handoff is None or id(handoff.parameter) in followed:
                continue
            followed.add(id(handoff.parameter))
            handoffs.append(handoff)
            uses += self._parameter_uses(handoff.parameter)
        use_ids = {id(use) for use in uses}
        if any(id(arg.value) not in use_ids for handoff in handoffs for arg in handoff.arguments):
            return original, []
        return uses, handoffs

    def _handoff(self, use: cst.CSTNode) -> Handoff | None:
        """``f(..., scaler, ...)`` / ``self.f(..., s=scaler)`` with ``f`` defined in this file,
        called only directly, every call filling the same parameter."""
        arg = self.get_metadata(ParentNodeProvider, use, None)
        if not (isinstance(arg, cst.Arg) and arg.value is use and not arg.star):
            return None
        call = self.get_metadata(ParentNodeProvider, arg, None)
        if not (isinstance(call, cst.Call) and any(a is arg for a in call.args)):
            return None
        found = self._local_function(call.func)
        if found is None:
            return None
        function, calls, skipped = found
        parameter = parameter_for(function, call, arg, skipped)
        if parameter is None:
            return None
        arguments = []
        for other in calls:
            argument = argument_for(function, other, parameter, skipped)
            if argument is None:
                return None
            arguments.append(argument)
        return Handoff(parameter, tuple(arguments))

    def _local_function(self, func: cst.BaseExpression):
        """(the undecorated ``def``, all its calls, 1 for a method else 0) when ``func`` names a
        function of this file that is only ever called (never passed on, aliased or imported
        under another spelling), else None."""
        if isinstance(func, cst.Name):
            return self._module_function(func)
        if is_self_attribute(func):
            return self._method(func)
        return None

    def _module_function(self, name: cst.Name):
        scope = self.get_metadata(ScopeProvider, name, None)
        if scope is None or name.value not in scope:
            return None
        assignments = list(scope[name.value])
        if len(assignments) != 1:
            return None
        function = getattr(assignments[0], "node", None)
        if not isinstance(function, cst.FunctionDef) or function.decorators:
            return None
        if isinstance(self.get_metadata(ScopeProvider, function, None), cst.metadata.ClassScope):
            return None
        calls = [self._called(access.node) for access in assignments[0].references]
        return None if any(call is None for call in calls) else (function, calls, 0)

    def _method(self, func: cst.Attribute):
        owner = self._enclosing(func, cst.ClassDef)
        name = func.attr.value
        if owner is None:
            return None
        definitions = [
            node
            for node in walk_all(self._module)
            if isinstance(node, cst.FunctionDef) and node.name.value == name
        ]
        if len(definitions) != 1 or definitions[0].decorators:
            return None
        function = definitions[0]
        if self.get_metadata(ParentNodeProvider, function, None) is not owner.body:
            return None
        attributes = [
            node
            for node in walk_all(self._module)
            if isinstance(node, cst.Attribute) and node.attr.value == name
        ]
        spelled = {id(function.name)} | {id(node.attr) for node in attributes}
        names = [
            node
            for node in walk_all(self._module)
            if isinstance(node, cst.Name) and node.value == name and id(node) not in spelled
        ]
        if names:
            return None
        calls = []
        for node in attributes:
            call = self._called(node)
            inside = self._enclosing(node, cst.ClassDef) is owner
            if call is None or not (is_self_attribute(node) and inside):
                return None
            calls.append(call)
        return function, calls, 1

    def _called(self, node: cst.CSTNode) -> cst.Call | None:
        call = self.get_metadata(ParentNodeProvider, node, None)
        return call if isinstance(call, cst.Call) and call.func is node else None

    def _parameter_uses(self, parameter: cst.Param) -> list[cst.CSTNode]:
        scope = self.get_metadata(ScopeProvider, parameter.name, None)
        name = parameter.name.value
        if scope is None:
            return []
        assignments = list(scope.assignments[name])
        if len(assignments) != 1 or getattr(assignments[0], "node", None) is not parameter:
            return [parameter]  # reassigned in the function: an unknown use
        return [access.node for access in assignments[0].references]

    def _plan_if_tests(self, uses) -> tuple[dict[int, bool], set[int]]:
        """``if scaler is not None:`` and friends: (if -> whether its else branch is the one that
        stays, the tests and branches that go)."""
        decided: dict[int, bool] = {}
        dropped: set[int] = set()
        for use in uses:
            test, truth = self._scaler_truth_test(use)
            if test is None:
                continue
            parent = self.get_metadata(ParentNodeProvider, test, None)
            if (
                isinstance(parent, cst.If)
                and parent.test is test
                and not isinstance(parent.orelse, cst.If)
            ):
                decided[id(parent)] = truth
                dropped.add(id(test))
                dropped.add(id(parent.body if truth else parent.orelse))
        return decided, dropped

    def _scaler_truth_test(self, use: cst.CSTNode) -> tuple[cst.CSTNode | None, bool]:
        """(the test expression, True when it is true with a scaler) for ``scaler``,
        ``not scaler``, ``scaler is (not) None`` and ``scaler.is_enabled()``."""
        parent = self.get_metadata(ParentNodeProvider, use, None)
        if isinstance(parent, cst.Attribute) and parent.attr.value == "is_enabled":
            call = self.get_metadata(ParentNodeProvider, parent, None)
            if isinstance(call, cst.Call) and call.func is parent and not call.args:
                return call, True
            return None, False
        if (
            isinstance(parent, cst.Comparison)
            and parent.left is use
            and len(parent.comparisons) == 1
        ):
            target = parent.comparisons[0]
            operator = {cst.IsNot: "is not None", cst.Is: "is None"}.get(type(target.operator))
            if (
                operator
                and isinstance(target.comparator, cst.Name)
                and target.comparator.value == "None"
            ):
                return parent, SCALER_TRUTH_TESTS[operator]
            return None, False
        if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
            return parent, False
        if isinstance(parent, cst.If) and parent.test is use:
            return use, True
        return None, False

    def _plan_use(self, use: cst.CSTNode, plan: ScalerPlan, removed: list) -> bool:
        """Record what becomes of one use of a scaler; False for a use this rule cannot unwrap."""
        attribute = self.get_metadata(ParentNodeProvider, use, None)
        if not (isinstance(attribute, cst.Attribute) and attribute.value is use):
            return False
        call = self.get_metadata(ParentNodeProvider, attribute, None)
        if not (isinstance(call, cst.Call) and call.func is attribute):
            return False
        method = attribute.attr.value
        if method == "scale" and len(call.args) == 1 and not call.args[0].keyword:
            plan.unwrapped_scales.add(id(call))
            return True
        if method == "step" and call.args and not call.args[0].keyword and not call.args[0].star:
            plan.plain_steps.add(id(call))
            return True
        if method in DROPPED_METHODS:
            statement = self._statement_of_expression(call)
            if statement is not None:
                removed.append(statement)
            return statement is not None
        if method == "state_dict" and not call.args:
            return self._plan_state_dict(call, plan, removed)
        return False

    def _plan_state_dict(self, call: cst.Call, plan: ScalerPlan, removed: list) -> bool:
        parent = self.get_metadata(ParentNodeProvider, call, None)
        if isinstance(parent, cst.DictElement) and parent.value is call:
            plan.dropped_entries.add(id(parent))
            return True
        if isinstance(parent, cst.Arg) and parent.keyword is not None:
            owner = self.get_metadata(ParentNodeProvider, parent, None)
            if isinstance(owner, cst.Call) and self.is_name(owner.func, "builtins.dict"):
                plan.dropped_entries.add(id(parent))
                return True
            return False
        if isinstance(parent, cst.Assign) and all(
            isinstance(t.target, cst.Subscript) for t in parent.targets
        ):
            line = self.get_metadata(ParentNodeProvider, parent, None)
            if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
                removed.append(line)
                return True
        return False

    def _statement_of_expression(self, call: cst.Call) -> cst.CSTNode | None:
        """The statement line holding only ``call`` (``a; b`` lines: the small statement)."""
        expr = self.get_metadata(ParentNodeProvider, call, None)
        if not isinstance(expr, cst.Expr):
            return None
        line = self.get_metadata(ParentNodeProvider, expr, None)
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            return line
        if isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            self._removed_small.add(id(expr))
            return expr
        return None

    def _keep(self, assignments, use: cst.CSTNode | None) -> None:
        _, _, call = assignments[0]
        where = f" (line {self.position(use)[0]})" if use is not None else ""
        self.flag(
            call,
            FINDING,
            f"this GradScaler is used in a way tpu-migrate cannot unwrap{where}; "
            "bf16 needs no loss scaling: remove it by hand",
        )

    def _inside(self, node: cst.CSTNode, ids: set[int]) -> bool:
        current: cst.CSTNode | None = node
        while current is not None:
            if id(current) in ids:
                return True
            current = self.get_metadata(ParentNodeProvider, current, None)
        return False

    def _enclosing(self, node: cst.CSTNode, kind: type) -> cst.CSTNode | None:
        current = self.get_metadata(ParentNodeProvider, node, None)
        while current is not None and not isinstance(current, kind):
            current = self.get_metadata(ParentNodeProvider, current, None)
        return current

    # ----------------------------------------------------------------- rewriting
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if id(original_node) in self.plan.unwrapped_scales:
            self.record_rewrite()
            return (
                updated_node.args[0].value.with_changes(
                    lpar=updated_node.lpar, rpar=updated_node.rpar
                )
                if updated_node.lpar
                else updated_node.args[0].value
            )
        if id(original_node) in self.plan.plain_steps:
            self.record_rewrite()
            optimizer, *rest = updated_node.args
            if rest:
                rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return cst.Call(
                func=cst.Attribute(value=optimizer.value, attr=cst.Name("step")),
                args=rest,
            )
        return self._without_dropped_arguments(original_node, updated_node)

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.Dict:
        elements = without_dropped(
            original_node.elements, updated_node.elements, self.plan.dropped_entries
        )
        return updated_node.with_changes(elements=elements)

    def _without_dropped_arguments(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        args = without_dropped(original.args, updated.args, self.plan.dropped_entries)
        return updated.with_changes(args=args) if len(args) != len(updated.args) else updated

    def leave_Parameters(
        self, original_node: cst.Parameters, updated_node: cst.Parameters
    ) -> cst.Parameters:
        changes = {}
        for kind in ("posonly_params", "params", "kwonly_params"):
            originals, updated = getattr(original_node, kind), getattr(updated_node, kind)
            kept = without_dropped(originals, updated, self.plan.dropped_params)
            if len(kept) != len(updated):
                changes[kind] = kept
                self.record_rewrite()
        if not changes:
            return updated_node
        if changes.get("kwonly_params") == [] and isinstance(updated_node.star_arg, cst.ParamStar):
            changes.update(without_bare_star(updated_node, changes))
        return updated_node.with_changes(**changes)

    def leave_SimpleStatementLine(self, original_node, updated_node):
        return self.edits.remove_small_statements(original_node, updated_node, self._removed_small)

    def leave_SimpleStatementSuite(self, original_node, updated_node):
        return self.edits.remove_small_statements(original_node, updated_node, self._removed_small)

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        orelse_stays = self.plan.decided_ifs.get(id(original_node))
        if orelse_stays is not None:
            kept = branch_statements(updated_node.orelse if orelse_stays else updated_node)
            self._replace_with(original_node, updated_node, kept)
        elif self._all_removed(original_node):
            self.edits.remove(original_node)
        return updated_node

    def _replace_with(self, original: cst.If, updated: cst.If, statements: list) -> None:
        self.record_rewrite()
        if not statements:
            self.edits.remove(original)
            return
        self.edits.replace(original, Replacement(tuple(statements), leading=updated.leading_lines))

    def _all_removed(self, node: cst.If) -> bool:
        """Every statement of the if (and of its else) is removed by this rule."""
        blocks = [node.body] + ([node.orelse.body] if isinstance(node.orelse, cst.Else) else [])
        if isinstance(node.orelse, cst.If):
            return False
        return all(
            isinstance(block, cst.IndentedBlock)
            and all(self.edits.is_removed(statement) for statement in block.body)
            for block in blocks
        )


# -------------------------------------------------------------------- helpers
def _scaler_assignments(rule: TpuCodemod, module: cst.Module):
    """(statement, target, constructor call) for each ``x = GradScaler(...)`` (also ``... if c
    else None``) and each ``x = None`` whose ``x`` is assigned a GradScaler too."""
    found = []
    nones = []
    for line in walk_all(module):
        if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
            continue
        assign = line.body[0]
        if isinstance(assign, cst.AnnAssign) and assign.value is not None:
            target, value = assign.target, assign.value
        elif isinstance(assign, cst.Assign) and len(assign.targets) == 1:
            target, value = assign.targets[0].target, assign.value
        else:
            continue
        if isinstance(value, cst.Name) and value.value == "None":
            nones.append((line, target, None))
            continue
        call = _scaler_constructor(rule, value)
        if call is not None:
            found.append((line, target, call))
    scaler_names = {code_of(target) for _, target, _ in found}
    return found + [
        entry
        for entry in nones
        if code_of(entry[1]) in scaler_names and _same_scope(rule, entry, found)
    ]


def _same_scope(rule: TpuCodemod, entry, found) -> bool:
    _, target, _ = entry
    scope = rule.get_metadata(ScopeProvider, target, None)
    return any(
        code_of(other) == code_of(target) and rule.get_metadata(ScopeProvider, other, None) is scope
        for _, other, _ in found
    )


def _scaler_constructor(rule: TpuCodemod, value: cst.BaseExpression) -> cst.Call | None:
    if isinstance(value, cst.IfExp):
        for branch, other in ((value.body, value.orelse), (value.orelse, value.body)):
            if isinstance(other, cst.Name) and other.value == "None":
                return _scaler_constructor(rule, branch)
        return None
    if not isinstance(value, cst.Call):
        return None
    if rule.is_name(value.func, *CUDA_SCALERS):
        return value
    if rule.is_name(value.func, *DEVICE_SCALERS):
        given = first_argument(value, "device")
        if given is None or is_training_device_type(given):
            return value
    return None
