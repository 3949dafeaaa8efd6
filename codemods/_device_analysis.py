"""The analysis of a file that the device rules share: which names are availability flags, which
nodes decide an optimizer option XLA lacks, which device strings become devices, and which
expressions are device choices.

Each rule reads the analysis of its own input (``DeviceAnalysis.visit_Module``), in pipeline
order: TPU129 (fused optimizers), TPU128 (availability branches), TPU127 (device moves), TPU101
(device choices), TPU126 (device strings). The analysis depends on the tree alone, so a rule
given the tree the rule before it analysed (it changed nothing) takes that analysis
(``FileAnalysis``, in the file's scratch) instead of making it again.

A flag such as ``use_cuda = torch.cuda.is_available()`` goes with the rewrite that takes its
last read (``_planned_drops``), whichever rule that is; an ``if`` whose arms a rule made
identical keeps one of them (``_merge_identical_arms``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst
from libcst.metadata import ParentNodeProvider, ScopeProvider

from ._base import TORCH_XLA, dotted_name, walk_all
from ._devices import (
    ACCELERATOR_TESTS,
    AVAILABILITY_TESTS,
    CURRENT_ACCELERATOR,
    FALLBACK_DEVICE,
    FALLBACK_TESTS,
    TENSOR_DEVICE_METHODS,
    TORCH_DEVICE,
    Collector,
    Trace,
    Verdict,
    argument,
    chain,
    collect,
    compares_device_string,
    cuda_literal,
    inline_block,
    joins_a_choice,
    keep_parentheses,
    kernel_decisions,
    keyword,
    mentions_device,
    only_calls,
    string_value,
    target_name,
)
from ._statements import AppliesStatementEdits

# Where the analysis of the last tree analysed is kept (the file's scratch): the device rules
# run one after the other, and one that changed nothing hands the next the same tree.
ANALYSIS_KEY = "tpu_migrate.device_analysis"


@dataclass
class FileAnalysis:
    """What the device rules know about one tree (the same for each of them); the sets hold ids
    of the tree's nodes."""

    module: Optional[cst.Module]
    collector: Optional[Collector] = None  # None: the device rules leave the file alone
    kernel_decisions: set[int] = field(default_factory=set)  # nodes deciding an option XLA lacks
    flag_uses: set[int] = field(default_factory=set)  # Names that read an accelerator flag
    flag_attributes: set[str] = field(default_factory=set)  # attribute flags, e.g. "args.cuda"
    # flag values that join the user's choice to an availability test: the test goes, the
    # choice stays (``use_cuda = not args.no_cuda and torch.cuda.is_available()``)
    choice_flag_values: set[int] = field(default_factory=set)
    retyped_uses: set[int] = field(default_factory=set)  # Names of a device string now a device
    # (statement line, name) of each name assigned availability tests (of the fallback devices
    # too): a flag that goes once its reads do
    flag_lines: list = field(default_factory=list)


class DeviceAnalysis(AppliesStatementEdits):
    """Mixin (before ``TpuCodemod`` in a rule's bases): takes the analysis of the tree when the
    rule enters it (made by the first rule given that tree), removes the availability flags
    whose last reads the rule's rewrites take, and keeps one arm of an ``if`` whose arms the
    rule made identical."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self._analysis = FileAnalysis(None)  # the tree's, from visit_Module on
        self._active = False  # the file imports torch and has no cuda API of its own
        self._removable_flags: set[int] = set()  # ids of statement lines that can go

    # ----------------------------------------------------------------- analysis
    def visit_Module(self, node: cst.Module) -> bool:
        analysis = self.context.scratch.get(ANALYSIS_KEY)
        if analysis is None or analysis.module is not node:
            analysis = self._analyse(node)
            self.context.scratch[ANALYSIS_KEY] = analysis
        self._analysis = analysis
        self._active = analysis.collector is not None
        if not self._active:
            self._removable_flags = set()
            return False
        trace = self._planned_drops(analysis.collector)
        self._removable_flags = self._flags_without_uses(analysis.flag_lines, trace)
        return True

    def _analyse(self, module: cst.Module) -> FileAnalysis:
        # Each step reads what the ones before it found, through ``self._analysis``.
        self._analysis = analysis = FileAnalysis(module)
        if not self.imports_module("torch"):
            return analysis
        collector = collect(module)
        if collector.defines_cuda_api:
            return analysis
        analysis.collector = collector
        analysis.kernel_decisions = kernel_decisions(collector)
        self._find_flags(collector.assignments, collector.stored_attributes)
        analysis.retyped_uses = self._find_retyped(collector.assignments)
        return analysis

    def _planned_drops(self, collector: Collector) -> Trace:
        """What the rule's rewrites will make disappear (a flag whose reads all go, goes)."""
        return Trace()

    def _in_kernel_decision(self, node: cst.CSTNode) -> bool:
        return id(node) in self._analysis.kernel_decisions

    def _find_flags(self, assignments, stored_attributes) -> None:
        """Flags are names or attributes assigned a boolean made of availability tests (not
        ``use_fused = torch.cuda.is_available()``, which decides an option XLA lacks)."""
        analysis = self._analysis
        accelerator_assignments = set()
        for line, target, value in assignments:
            kind = self._availability_kind(value)
            if kind is not None and isinstance(target, cst.Name):
                analysis.flag_lines.append((line, target))
            if kind != "accelerator" or self._in_kernel_decision(value):
                continue
            if joins_a_choice(value):  # ``not args.no_cuda and torch.cuda.is_available()``
                analysis.choice_flag_values.add(id(value))
                continue
            if isinstance(target, cst.Name):
                accelerator_assignments.update(self._scope_assignments(target))
            elif stored_attributes.get(dotted_name(target), 0) == 1:
                analysis.flag_attributes.add(dotted_name(target))
        for assignment in accelerator_assignments:
            for access in assignment.references:
                if set(access.referents) <= accelerator_assignments:
                    analysis.flag_uses.add(id(access.node))

    def _find_retyped(self, assignments) -> set[int]:
        """Reads of a name assigned ``"cuda" if ... else "cpu"``: a string that becomes
        ``torch_xla.device()`` (TPU101), so string operations on it need its ``.type``."""
        retyped = set()
        for line, target, value in assignments:
            if isinstance(target, cst.Name) and isinstance(value, cst.IfExp):
                arm = self._device_choice(value)
                if (
                    arm is not None
                    and cuda_literal(arm) is not None
                    and not self._wants_device_string(value)
                ):
                    retyped.update(self._scope_assignments(target))
        return {
            id(access.node)
            for assignment in retyped
            for access in assignment.references
            if set(access.referents) <= retyped
        }

    def _retyped(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Name) and id(node) in self._analysis.retyped_uses

    def _availability_kind(self, value: cst.BaseExpression) -> Optional[str]:
        """The kind of flag ``value`` makes: "accelerator" or "fallback" when it is made of
        availability tests joined by and/or (never negated) and calls nothing else; else None.
        (``torch.cuda.device_count() > 1`` makes a multi-GPU flag, not an availability one.)"""
        if not only_calls(value, lambda call: self.is_name(call.func, *AVAILABILITY_TESTS)):
            return None
        kinds = set()
        stack = [value]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.BooleanOperation):
                stack += [node.left, node.right]
            elif isinstance(node, cst.Call) and self.is_name(node.func, *ACCELERATOR_TESTS):
                kinds.add("accelerator")
            elif isinstance(node, cst.Call) and self.is_name(node.func, *FALLBACK_TESTS):
                kinds.add("fallback")
        if "accelerator" in kinds:
            return "accelerator"
        return "fallback" if kinds else None

    def _scope_assignments(self, target: cst.Name) -> list:
        try:
            scope = self.get_metadata(ScopeProvider, target)
        except KeyError:
            return []
        if scope is None:
            return []
        return [a for a in scope.assignments[target.value] if getattr(a, "node", None) is target]

    def _flags_without_uses(self, flag_lines, trace: Trace) -> set[int]:
        """Statement lines assigning a name flag whose reads all go with the rule's rewrites (a
        flag nobody reads is not the device rules' business)."""
        gone = trace.gone()
        removable = set()
        for line, target in flag_lines:
            scope_assignments = self._scope_assignments(target)
            reads = [access.node for a in scope_assignments for access in a.references]
            if reads and all(id(read) in gone for read in reads):
                removable.add(id(line))
        return removable

    def _parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        try:
            return self.get_metadata(ParentNodeProvider, node)
        except KeyError:
            return None

    def _is_elif(self, node: cst.If) -> bool:
        parent = self._parent(node)
        return isinstance(parent, cst.If) and parent.orelse is node

    # ----------------------------------------------------------------- accelerator tests
    def _is_accelerator_test(self, node: cst.BaseExpression) -> bool:
        if self._in_kernel_decision(node):
            return False  # `fused=torch.cuda.is_available()` stays False on a TPU host
        if isinstance(node, cst.Call):
            return self.is_name(node.func, *ACCELERATOR_TESTS)
        if isinstance(node, cst.Name):
            return id(node) in self._analysis.flag_uses
        if isinstance(node, cst.Attribute):
            return dotted_name(node) in self._analysis.flag_attributes
        return False

    def _evaluate(self, original, updated, trace: Trace) -> Verdict:
        """Fold the accelerator tests in ``original`` to True; the residual is built from
        ``updated`` (the same shape, with the children's rewrites)."""
        if self._is_accelerator_test(original):
            trace.folded.append(original)
            return True
        if (
            isinstance(original, cst.UnaryOperation)
            and isinstance(original.operator, cst.Not)
            and isinstance(updated, cst.UnaryOperation)
        ):
            inner = self._evaluate(original.expression, updated.expression, trace)
            if inner is None or isinstance(inner, bool):
                return None if inner is None else not inner
            return updated.with_changes(expression=keep_parentheses(inner, updated.expression))
        if isinstance(original, cst.BooleanOperation) and isinstance(updated, cst.BooleanOperation):
            return self._evaluate_boolean(original, updated, trace)
        return None

    def _evaluate_boolean(self, original, updated, trace: Trace) -> Verdict:
        left = self._evaluate(original.left, updated.left, trace)
        right = self._evaluate(original.right, updated.right, trace)
        if left is None and right is None:
            return None
        absorbing = isinstance(original.operator, cst.Or)  # True decides `or`, False `and`
        if left is absorbing or right is absorbing:
            trace.dropped.append(original.right if left is absorbing else original.left)
            return absorbing
        sides = [
            updated.left if left is None else left,
            updated.right if right is None else right,
        ]
        remaining = [side for side in sides if not isinstance(side, bool)]
        if not remaining:
            return not absorbing
        if len(remaining) == 1:
            return keep_parentheses(remaining[0], updated)
        return updated.with_changes(left=remaining[0], right=remaining[1])

    # ----------------------------------------------------------------- devices
    def _cuda_device(self, node: cst.CSTNode) -> bool:
        """``node`` names the CUDA device: a "cuda" string, torch.device of one,
        current_accelerator(), or a cuda-vs-cpu choice."""
        if cuda_literal(node) is not None:
            return True
        if isinstance(node, cst.Call):
            if self.is_name(node.func, CURRENT_ACCELERATOR):
                return True
            if self.is_name(node.func, TORCH_DEVICE):
                kind = argument(node, 0, "type")
                return kind is not None and self._cuda_device(kind.value)
        if isinstance(node, cst.IfExp):
            return self._device_choice(node) is not None
        return False

    def _fallback_device(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.SimpleString):
            return FALLBACK_DEVICE.fullmatch(string_value(node) or "") is not None
        if isinstance(node, cst.Call) and self.is_name(node.func, TORCH_DEVICE):
            kind = argument(node, 0, "type")
            return kind is not None and self._fallback_device(kind.value)
        if isinstance(node, cst.IfExp):
            return self._fallback_device(node.body) and self._fallback_device(node.orelse)
        return False

    def _device_choice(self, node: cst.IfExp) -> Optional[cst.BaseExpression]:
        """The CUDA arm of ``"cuda" if <anything> else "cpu"`` (either order, any spelling),
        unless the test reads the configured device string (``_configured_choice``)."""
        arm = self._cuda_arm(node)
        if arm is None or self._device_string_test(node.test):
            return None
        return arm

    def _configured_choice(self, node: cst.IfExp) -> Optional[cst.BaseExpression]:
        """The CUDA arm of ``"cuda" if "cuda" in device else "cpu"``: a choice that follows
        the device string the user configured (``--device=cpu`` still picks the CPU)."""
        arm = self._cuda_arm(node)
        if arm is None or not self._device_string_test(node.test):
            return None
        return arm

    def _cuda_arm(self, node: cst.IfExp) -> Optional[cst.BaseExpression]:
        """The CUDA arm of ``"cuda" if <test> else "cpu"`` (either order, any spelling)."""
        if self._cuda_device(node.body) and self._fallback_device(node.orelse):
            return node.body
        if self._cuda_device(node.orelse) and self._fallback_device(node.body):
            return node.orelse
        return None

    def _device_string_test(self, test: cst.BaseExpression) -> bool:
        """``test`` compares a device string of the configuration with device names (``"cuda"
        in device``, ``args.device == "cpu"``, ``device.startswith("cuda")``) and asks nothing
        about the machine (no availability test, no flag made of one)."""
        nodes = list(walk_all(test))
        if any(
            self._is_accelerator_test(node)
            or (isinstance(node, cst.Call) and self.is_name(node.func, *AVAILABILITY_TESTS))
            for node in nodes
        ):
            return False
        return any(compares_device_string(node) for node in nodes)

    def _startswith_cuda(self, call: cst.Call) -> bool:
        """``args.device.startswith("cuda")``, unless it decides an option XLA lacks
        (``fused=device.startswith("cuda")`` stays False on XLA, as on the CPU)."""
        func = call.func
        return (
            not self._in_kernel_decision(call)
            and isinstance(func, cst.Attribute)
            and func.attr.value == "startswith"
            and mentions_device(func.value)
            and len(call.args) == 1
            and isinstance(call.args[0].value, cst.SimpleString)
            and string_value(call.args[0].value) == "cuda"
        )

    def _device_choices(self, collector: Collector) -> list[cst.IfExp]:
        return [ifexp for ifexp in collector.ifexps if self._device_choice(ifexp) is not None]

    def _wants_device_string(self, node: cst.IfExp) -> bool:
        """A device choice assigned to a ``*type*`` name or given as a ``default=`` is
        configuration: it becomes "xla", not a device object."""
        parent = self._parent(node)
        if isinstance(parent, cst.Arg):
            return keyword(parent) == "default" or "type" in (keyword(parent) or "")
        if isinstance(parent, cst.Assign):
            return any("type" in (target_name(t.target) or "") for t in parent.targets)
        if isinstance(parent, cst.AnnAssign):
            return "type" in (target_name(parent.target) or "")
        return False

    def _xla_device(self) -> cst.Call:
        self.require_import(TORCH_XLA)
        return cst.Call(func=cst.parse_expression("torch_xla.device"))

    def _xla_string(self, literal: Optional[cst.BaseString]) -> cst.SimpleString:
        """The string "xla" in the quote style of ``literal`` (double quotes without one)."""
        self.require_import(TORCH_XLA)
        quote = getattr(literal, "quote", '"')[0]
        return cst.SimpleString(f"{quote}xla{quote}")

    def _is_torch(self, node: cst.CSTNode) -> bool:
        return any(
            name == "torch" or name.startswith("torch.") for name in self.qualified_names(node)
        )

    def _torch_callee(self, func: cst.BaseExpression) -> bool:
        """A callee whose ``device=`` takes a torch device (a device string is the user's own
        for any other callee)."""
        if isinstance(func, cst.Attribute) and func.attr.value in TENSOR_DEVICE_METHODS:
            return True
        return self._is_torch(func)

    def _release_calls(self, root: cst.CSTNode) -> None:
        """Calls under ``root`` are going away: an import used by them alone
        (``from torch.cuda import is_available``, ``import warnings``) goes too at the end of
        the pipeline. ``import torch`` always stays."""
        for node in walk_all(root):
            if not isinstance(node, cst.Call):
                continue
            name = node.func
            while isinstance(name, cst.Attribute):
                name = name.value
            if isinstance(name, cst.Name) and (name is node.func or not self._is_torch(name)):
                self.release_binding(node.func)

    # ----------------------------------------------------------------- statements
    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        if not self._active or self._is_elif(original_node):
            return updated_node
        return self._merge_identical_arms(original_node, updated_node)

    def _merge_identical_arms(self, original: cst.If, updated: cst.If) -> cst.If:
        """``if args.gpu: device = <cuda:gpu> else: device = <cuda>`` became two identical
        arms: keep one. Only when this rule made them identical and the tests are plain."""
        arms, else_ = chain(updated)
        original_arms, original_else = chain(original)
        if else_ is None or not isinstance(else_, cst.Else):
            return updated
        bodies = [arm.body for arm in arms] + [else_.body]
        original_bodies = [arm.body for arm in original_arms] + [original_else.body]
        if not all(body.deep_equals(bodies[0]) for body in bodies[1:]):
            return updated
        if all(body.deep_equals(original_bodies[0]) for body in original_bodies[1:]):
            return updated
        if not all(only_calls(arm.test, lambda call: False) for arm in original_arms):
            return updated
        flag_uses = self._analysis.flag_uses
        if any(id(node) in flag_uses for arm in original_arms for node in walk_all(arm.test)):
            return updated
        self.record_rewrite()
        self.edits.replace(original, inline_block(bodies[0], list(updated.leading_lines)))
        return updated

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if id(original_node) in self._removable_flags:
            self.record_rewrite()
            self._release_calls(original_node)
            self.edits.remove(original_node)
        return updated_node
