"""TPU128: branches on CUDA availability collapse to the accelerator path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import Invalid, Safety, TpuCodemod, Valid, walk_all
from ._device_analysis import DeviceAnalysis
from ._devices import (
    ACCELERATOR_TESTS,
    Collector,
    Trace,
    Verdict,
    chain,
    ends_terminal,
    inline_block,
    keep_parentheses,
)

ELSE = "else"  # ChainDecision.taken: the `else:` arm of the chain


@dataclass
class ChainDecision:
    """How an ``if``/``elif``/``else`` chain collapses."""

    kept: list  # (arm index, new test) of the arms that stay conditional, in order
    taken: Union[int, str, None]  # arm index (or ELSE) run when no kept arm is; None: nothing


class AvailabilityBranches(DeviceAnalysis, TpuCodemod):
    """
    What it does
        Takes the accelerator path wherever a script asks whether CUDA (or any accelerator)
        is there: ``torch.cuda.is_available()``, ``torch.accelerator.is_available()`` and the
        flags assigned from them (``use_cuda = torch.cuda.is_available()``) count as True.

        - ``if`` bodies are inlined, ``elif``/``else`` fallbacks (mps, cpu) go, and code after
          an inlined ``return`` goes; an arm whose test still asks something else keeps it
          without the availability part.
        - ``X if use_cuda else Y`` becomes ``X`` (a CUDA device there becomes
          ``torch_xla.device()``), ``use_cuda and cond`` becomes ``cond``, and an option read
          from a flag (``shuffle=has_gpu``) becomes ``True``.
        - A flag that joins the user's choice to availability keeps the choice:
          ``use_cuda = not args.no_cuda and torch.cuda.is_available()`` becomes
          ``use_cuda = not args.no_cuda``, its branches kept: ``--no-cuda`` still trains on
          the CPU.
        - A flag none of whose reads is left is removed. The comment lines right above a
          removed flag or ``if`` go with it unless the next statement follows it directly
          (see ``_statements``).

        Device choices (``"cuda" if use_cuda else "cpu"``) are TPU101's, and a flag they still
        read goes with them. Split off from TPU101 (``TPU101`` still names it in selections,
        suppressions and options); it runs first of TPU101's parts after TPU129.

    Why
        ``torch.cuda.is_available()`` and ``torch.accelerator.is_available()`` are False on a
        TPU host: an unmigrated script silently takes its CPU path.

    Example
        Before::

            use_cuda = not args.no_cuda and torch.cuda.is_available()
            if torch.cuda.is_available():
                torch.backends.cudnn.benchmark = True
            on_gpu = torch.cuda.is_available()
            loader = DataLoader(data, shuffle=on_gpu)

        After::

            use_cuda = not args.no_cuda
            torch.backends.cudnn.benchmark = True
            loader = DataLoader(data, shuffle=True)

    Left alone: ``torch.cuda.is_available()`` outside a branch or flag (``print(...)``), for
    TPU104 or a human; flags about the GPU count (``... and torch.cuda.device_count() > 1``);
    a branch whose accelerator arm is CUDA-only API (``torch.cuda.FloatTensor if use_cuda
    else torch.FloatTensor``); tests that decide an optimizer option XLA lacks (TPU129); a
    file that defines its own ``cuda`` function or method or a ``Device`` class; the
    assignment of an attribute flag (``args.cuda = ...``), whose branches still collapse,
    since other modules may read it.
    """

    CODE = "TPU128"
    NAME = "availability-branches"
    SUMMARY = "Collapse branches and flags on torch.cuda.is_available() to the accelerator path"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("is_available",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses("torch") and facts.uses(*ACCELERATOR_TESTS)

    VALID = [
        Valid(
            "import torch\n\n"
            "print(torch.cuda.is_available())\n"
            "ok = torch.cuda.device_count() > 0\n"
            "if args.cuda:\n    print('asked for --cuda')\n",
            why="availability outside a branch or flag, and a plain --cuda option, stay",
        ),
        Valid(
            "import torch\n\n"
            "cuda = torch.cuda.is_available()\n"
            "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n",
            why="the accelerator arm is CUDA-only API: a human picks the tensor type",
        ),
        Valid(
            "import torch\n\n"
            "multi_gpu = torch.cuda.is_available() and torch.cuda.device_count() > 1\n"
            "if multi_gpu:\n"
            "    model = torch.nn.DataParallel(model)\n",
            why="a flag about the GPU count is not an availability flag",
        ),
        Valid(
            "import torch\n\n"
            "use_cuda = torch.cuda.is_available()\n"
            "device = torch.device('cuda' if use_cuda else 'cpu')\n"
            "opt = torch.optim.AdamW(params, fused=use_cuda)\n",
            why="a device choice is TPU101's: the flag it reads stays for it; a fused decision "
            "keeps asking about CUDA",
        ),
    ]

    INVALID = [
        Invalid(
            "import torch\n\n"
            "has_gpu = torch.cuda.is_available()\n"
            "loader = DataLoader(ds, batch_size=64, shuffle=has_gpu, pin_memory=has_gpu)\n",
            "import torch\n\n"
            "loader = DataLoader(ds, batch_size=64, shuffle=True, pin_memory=True)\n",
            why="an option read from an availability flag is the accelerator's: shuffling stays "
            "on (the flag would be False on a TPU host); the flag goes with its last read",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._flag_arguments: set[int] = set()  # ids of flag reads passed as an option

    def _planned_drops(self, collector: Collector) -> Trace:
        trace = Trace()
        for head in collector.ifs:
            if not self._is_elif(head):
                self._trace_if_chain(head, trace)
        for ifexp in collector.ifexps:
            self._trace_ifexp(ifexp, trace)
        # ``DataLoader(..., shuffle=has_gpu)``: an option read from a flag is the accelerator's
        self._flag_arguments = {
            id(arg.value)
            for arg in collector.keyword_args
            if self._is_accelerator_test(arg.value) and not isinstance(arg.value, cst.Call)
        }
        trace.folded += [
            arg.value for arg in collector.keyword_args if id(arg.value) in self._flag_arguments
        ]
        return trace

    def _trace_if_chain(self, head: cst.If, trace: Trace) -> None:
        decision = self._decide_chain(head, head, trace)
        if decision is None or decision.kept or decision.taken is None:
            return
        arms, else_ = chain(head)
        taken = else_ if decision.taken == ELSE else arms[decision.taken]
        if ends_terminal(taken.body):
            for sibling in self._following_siblings(head):
                trace.dropped.append(sibling)

    def _trace_ifexp(self, node: cst.IfExp, trace: Trace) -> None:
        if self._device_choice(node) is not None:
            return  # TPU101's (its reads go with it there)
        verdict = self._ifexp_verdict(node, node, trace)
        if verdict is True:
            trace.dropped.append(node.orelse)
        elif verdict is False:
            trace.dropped.append(node.body)

    def _following_siblings(self, statement: cst.CSTNode) -> list:
        body = list(getattr(self._parent(statement), "body", ()))
        for index, sibling in enumerate(body):
            if sibling is statement:
                return body[index + 1 :]
        return []

    def _decide_chain(self, original: cst.If, updated: cst.If, trace: Trace):
        """How the chain collapses, or None when no test in it is about the accelerator."""
        original_arms, original_else = chain(original)
        updated_arms, _ = chain(updated)
        kept, taken, changed = [], ELSE if original_else is not None else None, False
        for index, (arm, new_arm) in enumerate(zip(original_arms, updated_arms)):
            verdict = self._evaluate(arm.test, new_arm.test, trace)
            if verdict is None:
                kept.append((index, new_arm.test))
                continue
            changed = True
            if verdict is False:
                trace.dropped += [arm.test, arm.body]
            elif verdict is True:
                taken = index
                trace.dropped += original_arms[index + 1 :]
                if original_else is not None:
                    trace.dropped.append(original_else)
                break
            else:
                kept.append((index, verdict))
        return ChainDecision(kept, taken) if changed else None

    # ----------------------------------------------------------------- rewrites
    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        if not self._active:
            return updated_node
        if self._device_choice(original_node) is not None:
            return updated_node  # TPU101's
        trace = Trace()
        verdict = self._ifexp_verdict(original_node, updated_node, trace)
        if verdict is None:
            return updated_node
        self.record_rewrite()
        for gone in [*trace.folded, *trace.dropped]:
            self._release_calls(gone)
        if not isinstance(verdict, bool):
            return updated_node.with_changes(test=verdict)
        chosen, original_chosen = (
            (updated_node.body, original_node.body)
            if verdict
            else (updated_node.orelse, original_node.orelse)
        )
        if self._cuda_device(original_chosen):
            return self._xla_device()
        return keep_parentheses(chosen, updated_node)

    def _ifexp_verdict(self, original: cst.IfExp, updated: cst.IfExp, trace: Trace) -> Verdict:
        """The test's verdict, unless the arm it picks is CUDA-only API
        (``torch.cuda.FloatTensor if use_cuda else torch.FloatTensor``): a human picks then."""
        scratch = Trace()
        verdict = self._evaluate(original.test, updated.test, scratch)
        if isinstance(verdict, bool):
            chosen = original.body if verdict else original.orelse
            if any(
                name.startswith("torch.cuda.")
                for node in walk_all(chosen)
                for name in self.qualified_names(node)
            ):
                return None
        trace.folded += scratch.folded
        trace.dropped += scratch.dropped
        return verdict

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        if not self._active or self._is_elif(original_node):
            return updated_node
        trace = Trace()
        decision = self._decide_chain(original_node, updated_node, trace)
        if decision is None:
            return self._merge_identical_arms(original_node, updated_node)
        self.record_rewrite()
        for gone in [*trace.folded, *trace.dropped]:
            self._release_calls(gone)
        arms, else_ = chain(updated_node)
        if decision.kept:
            return self._rebuild_chain(updated_node, arms, else_, decision)
        if decision.taken is None:
            self.edits.remove(original_node)
            return updated_node
        taken = else_ if decision.taken == ELSE else arms[decision.taken]
        leading = list(updated_node.leading_lines)
        if taken is not updated_node:
            leading += taken.leading_lines
        replacement = inline_block(taken.body, leading)
        if replacement.ends_block:
            for unreachable in self._following_siblings(original_node):
                self._release_calls(unreachable)
        self.edits.replace(original_node, replacement)
        return updated_node

    def _rebuild_chain(self, head: cst.If, arms, else_, decision: ChainDecision) -> cst.If:
        if decision.taken == ELSE:
            tail = else_
        elif decision.taken is not None:
            taken = arms[decision.taken]
            tail = cst.Else(body=taken.body, leading_lines=taken.leading_lines)
        else:
            tail = None
        for index, test in reversed(decision.kept[1:]):
            tail = arms[index].with_changes(test=test, orelse=tail)
        first_index, first_test = decision.kept[0]
        first = arms[first_index].with_changes(test=first_test, orelse=tail)
        if first_index:
            first = first.with_changes(leading_lines=[*head.leading_lines, *first.leading_lines])
        return first

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        """``use_cuda = not args.no_cuda and torch.cuda.is_available()`` -> ``use_cuda = not
        args.no_cuda``: the user's choice stays."""
        if id(original_node.value) not in self._analysis.choice_flag_values:
            return updated_node
        trace = Trace()
        residual = self._evaluate(original_node.value, updated_node.value, trace)
        if residual is None or isinstance(residual, bool):
            return updated_node
        self.record_rewrite()
        for gone in [*trace.folded, *trace.dropped]:
            self._release_calls(gone)
        return updated_node.with_changes(value=residual)

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        if id(original_node.value) not in self._flag_arguments:
            return updated_node
        self.record_rewrite()
        return updated_node.with_changes(value=cst.Name("True"))
