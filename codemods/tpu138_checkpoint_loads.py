"""TPU138: ``torch.load`` onto the CPU; a whole model loaded back goes to its device again."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import Invalid, Safety, TpuCodemod, Valid, code_of, walk_all
from ._checkpoints import LOAD, FollowsAssignments


class CheckpointLoads(FollowsAssignments, TpuCodemod):
    """
    What it does
        - ``torch.load(path)`` gets ``map_location="cpu"`` (in the quote style of the file's
          first string); a CUDA ``map_location`` (``"cuda:0"``, ``f"cuda:{gpu}"``,
          ``{"cuda:0": ...}``, a lambda calling ``.cuda()``, a variable of the same function
          holding such a string) becomes ``"cpu"``. A location that does not name CUDA (the
          script's ``device``, which TPU101 made the XLA device or the CPU) is left alone.
        - A whole model loaded back into the variable that holds it on the device (``model =
          torch.load(f)`` where the same scope has ``model = Net().to(device)``) moves there
          again: ``model = torch.load(f, map_location="cpu").to(device)``.

        Split off from TPU109 (``TPU109`` still names it in selections and suppressions). It
        runs right before TPU109, so that new strings take the quote of the file's first
        string as the user wrote it (TPU109 may lift away a guard whose test holds it).

    Why
        ``"cuda:N"`` does not exist on a TPU host, and a checkpoint saved from XLA tensors
        without ``xm.save`` loads back onto ``xla:0`` or fails where there is no XLA. Loading
        onto the CPU and then ``load_state_dict`` into a model already on the device is the
        torch_xla recipe. A module pickled whole has no device to go back to: loaded onto the
        CPU, it would train or evaluate there.

        Semantics: the loaded tensors are on the CPU, where on CUDA they were on the GPU; a
        state dict loaded into a model on the device is copied there by ``load_state_dict``.

    Example
        Before::

            state = torch.load("ckpt.pt", map_location=f"cuda:{gpu}")
            with open(path, "rb") as f:
                model = torch.load(f)

        After::

            state = torch.load("ckpt.pt", map_location="cpu")
            with open(path, "rb") as f:
                model = torch.load(f, map_location="cpu").to(device)
    """

    CODE = "TPU138"
    NAME = "checkpoint-loads"
    SUMMARY = (
        "torch.load onto the CPU (map_location='cpu'); a loaded whole model back to its device"
    )
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("load",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(LOAD)

    VALID = [
        Valid(
            "import torch\n\nsd = torch.load('m.pt', map_location='cpu')\nmodel.load_state_dict(sd)\n",
            why="already loads onto the CPU",
        ),
        Valid(
            "import pickle\nimport numpy as np\n\narr = np.load('a.npy')\nstate = pickle.load(f)\n",
            why="not torch's load",
        ),
        Valid(
            "import torch\nsd = torch.load(path, map_location=device)\n",
            why="a device chosen by the script (TPU101 made it the XLA device or the CPU)",
        ),
        Valid(
            "import torch\nsd = torch.load(path, map_location=lambda storage, loc: storage)\n"
            "args = torch.load(*paths)\n",
            why="a location that is not CUDA's, and arguments that cannot be read, are left alone",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef checkpoint(model, path):\n"
            "    state = {'model': model.state_dict()}\n    torch.save(state, path)\n"
            "    return torch.load(path)\n",
            "import torch\n\n\ndef checkpoint(model, path):\n"
            "    state = {'model': model.state_dict()}\n    torch.save(state, path)\n"
            "    return torch.load(path, map_location='cpu')\n",
            why="the new string takes the quote style of the file's first string",
        ),
        Invalid(
            "import torch\n\nckpt = torch.load(args.resume)\n",
            'import torch\n\nckpt = torch.load(args.resume, map_location="cpu")\n',
        ),
        Invalid(
            "import torch\n\nmodel = Net().to(device)\ntrain(model)\n"
            "with open(path, 'wb') as f:\n    torch.save(model, f)\n"
            "with open(path, 'rb') as f:\n    model = torch.load(f)\n"
            "evaluate(model)\nweights = torch.load(path)\n",
            "import torch\n\nmodel = Net().to(device)\ntrain(model)\n"
            "with open(path, 'wb') as f:\n    torch.save(model, f)\n"
            "with open(path, 'rb') as f:\n    model = torch.load(f, map_location='cpu').to(device)\n"
            "evaluate(model)\nweights = torch.load(path, map_location='cpu')\n",
            why="word_language_model: a whole pickled model loaded onto the CPU goes back to "
            "the model's device",
        ),
        Invalid(
            "import torch\n\n"
            "a = torch.load(p, map_location='cuda:0')\n"
            'b = torch.load(p, map_location=f"cuda:{gpu}")\n'
            "c = torch.load(p, map_location={'cuda:1': 'cuda:0'})\n"
            "d = torch.load(p, map_location=lambda storage, loc: storage.cuda(gpu))\n"
            "e = torch.load(p, 'cuda', weights_only=True)\n",
            "import torch\n\n"
            "a = torch.load(p, map_location='cpu')\n"
            "b = torch.load(p, map_location='cpu')\n"
            "c = torch.load(p, map_location='cpu')\n"
            "d = torch.load(p, map_location='cpu')\n"
            "e = torch.load(p, 'cpu', weights_only=True)\n",
        ),
        Invalid(
            "import torch\n\n\ndef resume(path, gpu):\n    loc = 'cuda:{}'.format(gpu)\n"
            "    return torch.load(path, map_location=loc)\n",
            "import torch\n\n\ndef resume(path, gpu):\n    loc = 'cuda:{}'.format(gpu)\n"
            "    return torch.load(path, map_location='cpu')\n",
            why="the ImageNet resume idiom",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._module: cst.Module | None = None
        self._file_quote: str | None = None

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if not self.is_name(original_node.func, LOAD):
            return updated_node
        args = list(updated_node.args)
        for index, arg in enumerate(original_node.args):
            is_location = (arg.keyword is not None and arg.keyword.value == "map_location") or (
                arg.keyword is None and index == 1 and not arg.star
            )
            if is_location:
                if not self._is_cuda_location(arg.value):
                    return updated_node
                args[index] = args[index].with_changes(
                    value=_string("cpu", _quote_of(arg.value, self._quote()))
                )
                self.record_rewrite()
                return updated_node.with_changes(args=args)
        if any(a.star for a in original_node.args) or not original_node.args:
            return updated_node
        args[-1] = args[-1].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
        args.append(
            cst.Arg(_string("cpu", self._quote()), keyword=cst.Name("map_location"), equal=_EQUAL)
        )
        self.record_rewrite()
        loaded = updated_node.with_changes(args=args)
        device = self._device_of_loaded_model(original_node)
        if device is None:
            return loaded
        return cst.Call(
            func=cst.Attribute(value=loaded, attr=cst.Name("to")),
            args=[cst.Arg(device.deep_clone())],
        )

    def _quote(self) -> str:
        """The quote of the file's first string literal: new strings use it (``"`` without one,
        or when it is a triple-quoted docstring)."""
        if self._file_quote is None:
            first = next((n for n in walk_all(self._module) if type(n) is cst.SimpleString), None)
            self._file_quote = _quote_of(first, '"') if first is not None else '"'
        return self._file_quote

    def _is_cuda_location(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Name):
            return any(_mentions_cuda(v) for v in self.assigned_values(value))
        return _mentions_cuda(value)

    def _device_of_loaded_model(self, load: cst.Call) -> cst.BaseExpression | None:
        """``model = torch.load(f)`` where ``model`` is, elsewhere in its scope, a module moved
        to a device (``model = Net().to(device)``): that device. A whole pickled module loaded
        onto the CPU has to go back to it."""
        assign = self.parent_of(load)
        if not (
            isinstance(assign, cst.Assign)
            and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)
        ):
            return None
        for value in self.assigned_values(assign.targets[0].target):
            if not (
                isinstance(value, cst.Call)
                and isinstance(value.func, cst.Attribute)
                and value.func.attr.value == "to"
                and len(value.args) == 1
                and value.args[0].keyword is None
                and not value.args[0].star
            ):
                continue
            device = value.args[0].value  # a device variable or torch_xla.device(), not a dtype
            if isinstance(device, cst.Name) or (
                isinstance(device, cst.Call) and self.is_name(device.func, "torch_xla.device")
            ):
                return device
        return None


_EQUAL = cst.AssignEqual(
    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
)


def _mentions_cuda(value: cst.BaseExpression) -> bool:
    return "cuda" in code_of(value)


def _quote_of(value: cst.BaseExpression, default: str) -> str:
    if isinstance(value, cst.SimpleString) and value.quote in ("'", '"'):
        return value.quote
    return default


def _string(text: str, quote: str) -> cst.SimpleString:
    return cst.SimpleString(f"{quote}{text}{quote}")
