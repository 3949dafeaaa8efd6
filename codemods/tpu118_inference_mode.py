"""TPU118: ``torch.inference_mode()`` becomes ``torch.no_grad()``: inference tensors fail on XLA."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import FindingDoc, ImportSpec, Invalid, Safety, TpuCodemod, Valid

INFERENCE_MODE = ("torch.inference_mode", "torch.autograd.grad_mode.inference_mode")
NO_GRAD_IMPORT = ImportSpec("torch", "no_grad")  # for ``from torch import inference_mode``
FINDING = "TPU261"


class InferenceMode(TpuCodemod):
    """
    What it does
        Turns ``torch.inference_mode()`` into ``torch.no_grad()``: in ``with`` statements, as a
        decorator (``@torch.inference_mode()`` -> ``@torch.no_grad()``, and the bare
        ``@torch.inference_mode`` -> ``@torch.no_grad``) and wherever else the context manager
        is built (``ctx = torch.inference_mode()``). ``inference_mode(True)`` /
        ``inference_mode(mode=True)`` are the same call. The spelling of the module is kept
        (``th.inference_mode()`` -> ``th.no_grad()``); a ``from torch import inference_mode``
        name becomes ``no_grad``, imported from torch.

        Left alone: ``inference_mode(False)`` (it only leaves inference mode, which works on
        XLA) and ``torch.is_inference_mode_enabled()``. ``inference_mode(flag)`` with a
        computed flag is reported (TPU261): ``torch.no_grad() if flag else
        contextlib.nullcontext()`` is the XLA-safe form, and whether the flag's False case
        should also enable gradients is the author's call.

    Why
        On torch_xla 2.9 every XLA operation under inference mode fails with
        ``RuntimeError: Cannot set version_counter for inference tensor`` (verified on
        XLA:CPU: the forward pass of an evaluation loop under ``with torch.inference_mode():``
        or ``@torch.inference_mode()``, on a fresh model as well as between training epochs).
        The error comes from torch_xla's tensor implementation, not from the backend.
        ``torch.no_grad()`` gives evaluation what it needs: no autograd graph is recorded.
        What inference mode adds, skipping version-counter and view bookkeeping on the host,
        saves nothing on XLA, where the lazy tensor traces the graph anyway. Tensors made under
        ``no_grad`` may also be used in autograd later, so no code that worked before breaks.

    Example
        Before::

            @torch.inference_mode()
            def evaluate(model, loader):
                ...

            with torch.inference_mode():
                preds = model(x)

        After::

            @torch.no_grad()
            def evaluate(model, loader):
                ...

            with torch.no_grad():
                preds = model(x)
    """

    CODE = "TPU118"
    NAME = "inference-mode"
    SUMMARY = "torch.inference_mode() becomes torch.no_grad(): inference tensors fail on XLA"
    SAFETY = Safety.SAFE
    TRIGGERS = ("inference_mode",)

    FINDINGS = {
        FINDING: FindingDoc(
            "inference_mode with a computed flag fails on XLA whenever the flag is true",
            why="every XLA operation under inference mode raises 'Cannot set version_counter "
            "for inference tensor' in torch_xla 2.9.",
            what_to_do="use torch.no_grad() if flag else contextlib.nullcontext() (or "
            "torch.set_grad_enabled(not flag) when the False case should record gradients).",
        ),
    }

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*INFERENCE_MODE)

    VALID = [
        Valid(
            "import torch\n\n"
            "with torch.no_grad():\n"
            "    preds = model(x)\n"
            "print(torch.is_inference_mode_enabled())\n",
            why="already no_grad; asking whether inference mode is on is harmless",
        ),
        Valid(
            "import torch\n\n"
            "with torch.inference_mode(False):\n"
            "    loss = model(x).sum()\n"
            "with torch.inference_mode(mode=False):\n"
            "    loss.backward()\n",
            why="inference_mode(False) only leaves inference mode: it runs on XLA",
        ),
        Valid(
            "import contextlib\n\n\n"
            "def inference_mode():\n"
            "    return contextlib.nullcontext()\n\n\n"
            "with inference_mode():\n"
            "    run()\n",
            why="a function of the user's own with the same name is not torch's",
        ),
    ]

    INVALID = [
        Invalid(
            "import torch as th\n"
            "from torch import inference_mode\n\n"
            "with th.inference_mode(True), open('preds.txt', 'w') as out:\n"
            "    out.write(str(model(x)))\n"
            "ctx = inference_mode(mode=True)\n"
            "with th.autograd.grad_mode.inference_mode():\n"
            "    model(x)\n",
            "import torch as th\n"
            "from torch import no_grad\n\n"
            "with th.no_grad(), open('preds.txt', 'w') as out:\n"
            "    out.write(str(model(x)))\n"
            "ctx = no_grad()\n"
            "with th.autograd.grad_mode.no_grad():\n"
            "    model(x)\n",
            why="an aliased module keeps its alias; an imported name is replaced with its import; "
            "mode=True is the default",
        ),
        Invalid(
            "import torch\n\n" "with torch.inference_mode(not args.train):\n" "    model(x)\n",
            "import torch\n\n"
            "# TODO(tpu-migrate): TPU261 inference_mode with a computed flag fails on XLA "
            "whenever the flag is true\n"
            "with torch.inference_mode(not args.train):\n"
            "    model(x)\n",
            findings=[FINDING],
            why="a computed mode is reported, not guessed",
        ),
    ]

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if not self.is_name(original_node.func, *INFERENCE_MODE):
            return updated_node
        mode = _mode_argument(original_node)
        if mode is None:
            no_grad = self._no_grad(original_node.func, updated_node.func)
            return updated_node.with_changes(func=no_grad, args=())
        if not _is_literal(mode, "False"):
            self.flag(original_node, FINDING, str(self.FINDINGS[FINDING]))
        return updated_node

    def leave_Decorator(
        self, original_node: cst.Decorator, updated_node: cst.Decorator
    ) -> cst.Decorator:
        target = original_node.decorator
        if isinstance(target, cst.Call) or not self.is_name(target, *INFERENCE_MODE):
            return updated_node  # calls are leave_Call's
        no_grad = self._no_grad(target, updated_node.decorator)
        return updated_node.with_changes(decorator=no_grad)

    def _no_grad(
        self, original: cst.BaseExpression, updated: cst.BaseExpression
    ) -> cst.BaseExpression:
        """``no_grad`` spelled like ``inference_mode`` was (``original``: the node in the tree
        the rule's metadata describes, ``updated``: its current version)."""
        self.record_rewrite()
        if isinstance(updated, cst.Attribute):
            return updated.with_changes(attr=cst.Name("no_grad"))
        self.release_binding(original)
        self.require_import(NO_GRAD_IMPORT)
        return cst.Name("no_grad")


def _mode_argument(call: cst.Call) -> cst.BaseExpression | None:
    """The ``mode`` argument unless it is missing or a literal True (None then)."""
    if not call.args:
        return None
    arg = call.args[0]
    if arg.star or (arg.keyword is not None and arg.keyword.value != "mode"):
        return arg.value
    return None if _is_literal(arg.value, "True") else arg.value


def _is_literal(node: cst.BaseExpression, value: str) -> bool:
    return isinstance(node, cst.Name) and node.value == value
