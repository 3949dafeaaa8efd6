"""TPU113: training DataLoaders drop their last partial batch; evaluation loaders are flagged."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import (
    FindingDoc,
    Invalid,
    Safety,
    TpuCodemod,
    Valid,
    code_of,
    dotted_name,
    with_keyword_argument,
)
from ._loops import (
    DATA_LOADERS,
    ModuleIndex,
    calls,
    identifier_words,
    positional_arguments,
    walk_code,
)

DISTRIBUTED_SAMPLERS = (
    "torch.utils.data.DistributedSampler",
    "torch.utils.data.distributed.DistributedSampler",
)
PARTIAL_EVAL_BATCH = "TPU231"
DROP_LAST_NOT_SET = "TPU233"
# Words in a loader's (or its dataset's) name that say what it is for, when no loop of this
# file shows it.
TRAIN_WORDS = frozenset({"train", "training", "trn"})
EVAL_WORDS = frozenset(
    {"eval", "evaluation", "val", "valid", "validation", "test", "dev", "predict", "inference"}
)
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...): positional arguments
# past ``sampler`` are too unusual to reason about.
MAX_POSITIONAL = 4
LOADER_PARAMETERS = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler")
TRAIN, EVAL = "train", "eval"


class StaticBatchShapes(TpuCodemod):
    """
    What it does
        Adds ``drop_last=True`` to every *training* ``torch.utils.data.DataLoader(...)`` and to
        the ``DistributedSampler(...)`` it samples with (passed as ``sampler=``, directly or
        through a name).

        A loader is a training loader when a loop of this file iterates it (directly, through
        ``enumerate``/``tqdm``/``pl.MpDeviceLoader``, through a name or ``self`` attribute it is
        assigned to, or through a parameter the callers of the function pass it for) and that
        loop's body runs a ``.backward()`` (itself or in a function of this file it calls). A
        loader iterated only by loops without a backward is an evaluation loader. A loader no
        loop of this file reaches is judged by its name and its dataset's name: ``train``
        -> training; ``eval``/``val``/``valid``/``test``/``dev``/``predict`` -> evaluation;
        anything else is left alone (``shuffle=True`` alone is not taken as proof).

        Evaluation loaders are not changed (dropping samples would change the metrics); when
        their last batch can be partial they get finding TPU231. Nothing happens when the loader
        already says ``drop_last=...``, batches one sample at a time (``batch_size=1``, ``None``
        or no batch size) or is built with ``batch_sampler=`` (eval). A training loader whose
        drop_last cannot be set safely gets finding TPU233 instead: an explicit
        ``drop_last=False`` (a decision of the author, not overridden), a ``batch_sampler=``
        (the sampler makes the batches) and ``**kwargs`` (they may already hold drop_last).

    Why
        XLA compiles one graph per input shape. The last batch of an epoch is smaller when the
        dataset size is not a multiple of the batch size, so every epoch ends with a second
        graph compilation, and the compiled graph for the full batch is evaluated again at the
        next epoch (pytorch/xla #2020, #2749). Dropping the partial batch of a shuffled training
        set loses a few samples per epoch, different ones each epoch.

    Example
        Before::

            train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
            test_loader = DataLoader(test_set, batch_size=256)
            for x, y in train_loader:
                loss_fn(model(x), y).backward()
                optimizer.step()

        After::

            train_loader = DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True)
            # TODO(tpu-migrate): TPU231 partial last batch recompiles: pad the last batch ...
            test_loader = DataLoader(test_set, batch_size=256)
            for x, y in train_loader:
                loss_fn(model(x), y).backward()
                optimizer.step()
    """

    CODE = "TPU113"
    NAME = "static-batch-shapes"
    SUMMARY = "Training DataLoaders and their DistributedSampler drop the last partial batch"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("DataLoader", "DistributedSampler")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*DATA_LOADERS, *DISTRIBUTED_SAMPLERS)

    NUMERICS = (
        "training DataLoaders drop their last partial batch (drop_last=True), so each epoch has "
        "one step fewer when the dataset size is not a multiple of the batch size; verify makes "
        "the original run drop the same batch of the same loaders, so the steps line up"
    )
    FINDINGS = {
        PARTIAL_EVAL_BATCH: FindingDoc(
            "evaluation DataLoader whose last batch can be partial: it compiles a second graph",
            why="XLA compiles one graph per input shape: a smaller last batch compiles (and "
            "caches) one more graph per distinct size. tpu-migrate does not drop it, since "
            "dropping evaluation samples changes the metrics.",
            what_to_do="Accept one extra compilation per evaluation (cheap when evaluation is "
            "rare), or pad the last batch to the full batch size and mask the padded samples "
            "out of the metrics, or choose a batch size that divides the dataset.",
        ),
        DROP_LAST_NOT_SET: FindingDoc(
            "training DataLoader that keeps its partial last batch: drop_last is not set "
            "automatically",
            why="A partial last batch compiles a second graph every epoch. The rule adds "
            "drop_last=True only when it can see the whole call: here drop_last=False is an "
            "explicit choice, a batch_sampler makes the batches itself, or **kwargs may hold "
            "drop_last already.",
            what_to_do="Pass drop_last=True (or make the batch sampler drop the partial batch), "
            "unless every sample of every epoch must be seen; then pad the last batch instead.",
        ),
    }

    VALID = [
        Valid(
            "from torch.utils.data import DataLoader\n\n"
            "train_loader = DataLoader(train_set, batch_size=32, shuffle=True, drop_last=True)\n"
            "for x, y in train_loader:\n"
            "    loss_fn(model(x), y).backward()\n"
            "    optimizer.step()\n",
            why="already drops the partial batch",
        ),
        Valid(
            "from torch.utils.data import DataLoader\n\n"
            "loader = DataLoader(samples, batch_size=32)\n"
            "features = encode_all(encoder, loader)\n",
            why="a loader of unknown role (no loop here, no telling name) is left alone",
        ),
        Valid(
            "from torch.utils.data import DataLoader\n\n"
            "test_loader = DataLoader(test_set, batch_size=1)\n"
            "train_loader = DataLoader(train_set)\n"
            "for x, y in train_loader:\n"
            "    loss_fn(model(x), y).backward()\n",
            why="batches of one sample (explicit or default) are never partial",
        ),
        Valid(
            "from mylib import DataLoader\n\n"
            "train_loader = DataLoader(train_set, batch_size=32)\n"
            "for x, y in train_loader:\n"
            "    loss_fn(model(x), y).backward()\n",
            why="a DataLoader that is not torch's",
        ),
        Valid(
            "from torch.utils.data import DataLoader\n\n"
            "val_loader = DataLoader(val_set, batch_size=64, drop_last=False)\n"
            "val_batches = DataLoader(val_set, batch_sampler=BucketSampler(val_set))\n",
            why="an evaluation loader that decides about its last batch itself",
        ),
        Valid(
            "from torch.utils.data import DataLoader\n\n"
            "loader_kwargs = dict(batch_size=8, drop_last=args.drop_last)\n"
            "train_loader = DataLoader(train_set, **loader_kwargs)\n"
            "train_batches = DataLoader(train_set, batch_size=8, drop_last=args.drop_last)\n",
            why="drop_last chosen by a flag, directly or through readable **kwargs",
        ),
    ]

    INVALID = [
        Invalid(
            "from accelerate import Accelerator\n"
            "from torch.utils.data import DataLoader\n\n"
            "accelerator = Accelerator()\n"
            "train_loader = DataLoader(train_set, batch_size=32, shuffle=True)\n"
            "model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)\n",
            "from accelerate import Accelerator\n"
            "from torch.utils.data import DataLoader\n\n"
            "accelerator = Accelerator()\n"
            "# TODO(tpu-migrate): TPU233 Accelerate iterates this training loader: drop_last=True "
            "spares its partial last batch a graph of its own\n"
            "train_loader = DataLoader(train_set, batch_size=32, shuffle=True)\n"
            "model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)\n",
            findings=[DROP_LAST_NOT_SET],
            why="Accelerate re-creates a prepared loader: the drop_last it needs is the user's call",
        ),
        Invalid(
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "from torch.utils.data.distributed import DistributedSampler\n\n"
            "sampler = DistributedSampler(train_set, shuffle=True)\n"
            "train_loader = DataLoader(train_set, batch_size=32, sampler=sampler)\n"
            "eval_loader = DataLoader(\n"
            "    eval_set, batch_size=32, sampler=DistributedSampler(eval_set, shuffle=False)\n"
            ")\n",
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "from torch.utils.data.distributed import DistributedSampler\n\n"
            "sampler = DistributedSampler(train_set, shuffle=True, drop_last=True)\n"
            "train_loader = DataLoader(train_set, batch_size=32, sampler=sampler, "
            "drop_last=True)\n"
            "# TODO(tpu-migrate): TPU231 partial last batch recompiles: pad the last batch or "
            "accept one extra compile\n"
            "eval_loader = DataLoader(\n"
            "    eval_set, batch_size=32, sampler=DistributedSampler(eval_set, shuffle=False)\n"
            ")\n",
            findings=[PARTIAL_EVAL_BATCH],
            why="no loop here: the names decide; the training sampler drops its tail too",
        ),
    ]

    # ------------------------------------------------------------------ planning
    def visit_Module(self, node: cst.Module) -> bool:
        self.index = ModuleIndex(self, node)
        self.additions: set[int] = set()  # calls that get drop_last=True
        roles = self._roles_from_loops()
        for call in self.index.calls:
            if not self.index.is_data_loader_call(call):
                continue
            role = roles.get(id(call)) or self._role_from_names(call)
            framework = self.index.frameworks.manages_value(call)
            if role == TRAIN and framework is not None:
                self._flag_framework_loader(call, framework)
            elif role == TRAIN:
                self._plan_training_loader(call)
            elif role == EVAL:
                self._plan_eval_loader(call)
        return True

    def _roles_from_loops(self) -> dict[int, str]:
        """DataLoader calls iterated by loops of this file -> TRAIN (a loop with a backward
        iterates it) or EVAL (only loops without one do)."""
        roles: dict[int, str] = {}
        training_calls = self._calls_of_functions_running_backward()
        for loop in self.index.for_loops:
            loader, _ = self.index.unwrap_iterable(loop.iter)
            trains = any(
                _is_backward(node) or id(node) in training_calls for node in walk_code(loop.body)
            )
            for call in self._data_loader_calls(loader):
                if roles.get(id(call)) != TRAIN:
                    roles[id(call)] = TRAIN if trains else EVAL
        return roles

    def _calls_of_functions_running_backward(self) -> set[int]:
        """Calls of the functions of this file whose own code runs a ``.backward()``."""
        return {
            id(call)
            for function in self.index.functions
            if any(_is_backward(node) for node in walk_code(function.body))
            for call in self.index.calls_of(function)
        }

    def _data_loader_calls(self, ref: cst.BaseExpression, depth: int = 2) -> list[cst.Call]:
        """The ``DataLoader(...)`` calls ``ref`` may evaluate to: the call itself, the loader
        an ``MpDeviceLoader`` wraps, a name's or ``self`` attribute's assignments, or what the
        callers of a function pass for a parameter."""
        index = self.index
        if index.is_data_loader_call(ref):
            return [ref]  # type: ignore[list-item]
        if index.is_device_loader_call(ref):
            wrapped = positional_arguments(ref)  # type: ignore[arg-type]
            return self._data_loader_calls(wrapped[0].value, depth) if wrapped else []
        if depth == 0:
            return []
        source = index.source_of(ref)
        if source is None:
            return []
        if source.parameter is not None and source.function is not None:
            passed = index.call_arguments(source.function, source.parameter)
        else:
            passed = [binding.value for binding in source.bindings]
        return [call for value in passed for call in self._data_loader_calls(value, depth - 1)]

    def _role_from_names(self, call: cst.Call) -> str | None:
        words = set()
        for binding in self.index.all_bindings:
            if binding.value is call:
                words |= _words_of(binding.target)
        dataset = _argument(call, "dataset", 0)
        if dataset is not None:
            words |= _words_of(dataset)
        if words & TRAIN_WORDS and not words & EVAL_WORDS:
            return TRAIN
        if words & EVAL_WORDS and not words & TRAIN_WORDS:
            return EVAL
        return None

    def _plan_training_loader(self, call: cst.Call) -> None:
        arguments = self._arguments(call)
        if arguments is None:
            self.flag(
                call,
                DROP_LAST_NOT_SET,
                "training loader built from **kwargs: pass drop_last=True unless they hold it",
            )
            return
        drop_last = arguments.get("drop_last")
        if drop_last is not None:
            if code_of(drop_last) == "False":
                self.flag(
                    call,
                    DROP_LAST_NOT_SET,
                    "drop_last=False keeps the partial last batch of this training loader: it "
                    "recompiles every epoch",
                )
            return
        if arguments.get("batch_sampler") is not None:
            self.flag(
                call,
                DROP_LAST_NOT_SET,
                "the batch_sampler makes the batches of this training loader: make it drop the "
                "partial last batch",
            )
            return
        if not _batches_several(arguments) or len(positional_arguments(call)) > MAX_POSITIONAL:
            return
        self.additions.add(id(call))
        for sampler in self._distributed_samplers(arguments.get("sampler")):
            if _argument(sampler, "drop_last") is None and not any(a.star for a in sampler.args):
                self.additions.add(id(sampler))

    def _flag_framework_loader(self, call: cst.Call, framework: str) -> None:
        """A training loader a framework iterates: it batches on its own terms (Lightning and
        Accelerate re-create the loader with their samplers), so drop_last is not set for it."""
        if _no_partial_batch_to_report(self._arguments(call)):
            return
        self.flag(
            call,
            DROP_LAST_NOT_SET,
            f"{framework} iterates this training loader: drop_last=True spares its partial "
            "last batch a graph of its own",
        )

    def _plan_eval_loader(self, call: cst.Call) -> None:
        if _no_partial_batch_to_report(self._arguments(call)):
            return
        self.flag(
            call,
            PARTIAL_EVAL_BATCH,
            "partial last batch recompiles: pad the last batch or accept one extra compile",
        )

    def _arguments(self, call: cst.Call) -> dict[str, cst.BaseExpression] | None:
        """What the loader call passes, by parameter name, ``**kwargs`` included; None when a
        ``**`` dict cannot be read (then anything may be in it)."""
        arguments: dict[str, cst.BaseExpression] = {}
        for name, arg in zip(LOADER_PARAMETERS, positional_arguments(call)):
            arguments[name] = arg.value
        for arg in call.args:
            if arg.star == "**":
                known = self._dict_keys(arg.value)
                if known is None:
                    return None
                arguments.update(known)
            elif arg.star == "*":
                return None
            elif arg.keyword is not None:
                arguments[arg.keyword.value] = arg.value
        return arguments

    def _dict_keys(
        self, expr: cst.BaseExpression, depth: int = 2
    ) -> dict[str, cst.BaseExpression] | None:
        """The string keys (and values) of the dict ``expr`` evaluates to: a dict literal, a
        ``dict(k=v)`` call, either branch of ``a if c else b``, or a name whose assignments and
        ``name.update(...)`` calls are all of these. None when the keys cannot all be known."""
        if isinstance(expr, cst.Dict):
            keys = {}
            for element in expr.elements:
                if not isinstance(element, cst.DictElement) or not isinstance(
                    element.key, cst.SimpleString
                ):
                    return None
                keys[element.key.evaluated_value] = element.value
            return keys
        if isinstance(expr, cst.Call) and self.is_name(expr.func, "builtins.dict"):
            if any(arg.keyword is None for arg in expr.args):
                return None
            return {arg.keyword.value: arg.value for arg in expr.args}  # type: ignore[union-attr]
        if isinstance(expr, cst.IfExp):
            return _merged([self._dict_keys(expr.body, depth), self._dict_keys(expr.orelse, depth)])
        if isinstance(expr, cst.Name) and depth > 0:
            values = self.index.binding_values(expr)
            if not values or self._written_by_subscript(expr.value):
                return None
            parts = [self._dict_keys(value, depth - 1) for value in values]
            for update in self._updates_of(expr.value):
                parts.append(self._update_keys(update, depth - 1))
            return _merged(parts)
        return None

    def _written_by_subscript(self, name: str) -> bool:
        return any(
            isinstance(binding.target, cst.Subscript) and dotted_name(binding.target.value) == name
            for binding in self.index.all_bindings
        )

    def _updates_of(self, name: str) -> list[cst.Call]:
        return [
            call
            for call in self.index.calls
            if isinstance(call.func, cst.Attribute)
            and call.func.attr.value in ("update", "setdefault", "__setitem__")
            and dotted_name(call.func.value) == name
        ]

    def _update_keys(self, call: cst.Call, depth: int) -> dict[str, cst.BaseExpression] | None:
        if not isinstance(call.func, cst.Attribute) or call.func.attr.value != "update":
            return None
        parts = []
        for arg in call.args:
            if arg.keyword is not None:
                parts.append({arg.keyword.value: arg.value})
            elif not arg.star:
                parts.append(self._dict_keys(arg.value, depth))
            else:
                return None
        return _merged(parts)

    def _distributed_samplers(self, sampler: cst.BaseExpression | None) -> list[cst.Call]:
        if sampler is None:
            return []
        values = [sampler] if isinstance(sampler, cst.Call) else self.index.binding_values(sampler)
        return [value for value in values or [] if calls(self, value, DISTRIBUTED_SAMPLERS)]

    # ------------------------------------------------------------------ rewriting
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if id(original_node) not in self.additions:
            return updated_node
        self.record_rewrite()
        self.align_original(original_node, "drop_last")
        return with_keyword_argument(updated_node, "drop_last", cst.Name("True"))


def _is_backward(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "backward"
    )


def _argument(call: cst.Call, keyword: str, position: int | None = None):
    """The value passed for ``keyword`` (or at ``position``), else None."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = positional_arguments(call)
    if position is not None and position < len(positional):
        return positional[position].value
    return None


def _batches_several(arguments: dict[str, cst.BaseExpression]) -> bool:
    """The loader's batches may hold more than one sample (DataLoader's batch_size defaults
    to 1; ``None`` turns batching off)."""
    batch_size = arguments.get("batch_size")
    return batch_size is not None and code_of(batch_size) not in ("1", "None")


def _merged(parts: list[dict | None]) -> dict | None:
    """The union of several dicts' keys (a later value wins); None when one is unknown."""
    if any(part is None for part in parts):
        return None
    merged: dict = {}
    for part in parts:
        merged.update(part)  # type: ignore[arg-type]
    return merged


def _words_of(node: cst.CSTNode) -> set[str]:
    """The words of a plain name or attribute chain (``self.train_loader``); nothing for other
    expressions (``MNIST(root, train=False)`` says nothing about its role)."""
    name = dotted_name(node)
    if name is None:
        return set()
    return {word for part in name.split(".") for word in identifier_words(part)}


def _no_partial_batch_to_report(arguments) -> bool:
    """The loader decides about its last batch itself (``drop_last``, a batch sampler), or its
    batches of one sample are never partial; None: arguments this rule cannot read."""
    return arguments is not None and (
        "drop_last" in arguments or "batch_sampler" in arguments or not _batches_several(arguments)
    )
