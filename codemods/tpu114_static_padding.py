"""TPU114: pad variable-length batches to a few length buckets so each bucket compiles once."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ScopeProvider

from migrate.fastcst.facts import FileFacts
from ._base import (
    FindingDoc,
    ImportSpec,
    Invalid,
    Safety,
    TpuCodemod,
    Valid,
    code_of,
    dotted_name,
    with_keyword_argument,
)
from ._loops import ModuleIndex, identifier_words, positional_arguments
from ._statements import after_imports

PAD_SEQUENCE = ("torch.nn.utils.rnn.pad_sequence",)
HELPER = "pad_to_bucket"
MAX_LENGTH_CONSTANT = "TPU_MAX_SEQ_LEN"
DEFAULT_MAX_LENGTH = 512
MAX_LENGTH_MISSING = "TPU232"
# Module constants that bound a sequence's length (compared lower-cased).
MAX_LENGTH_NAMES = frozenset(
    {
        "max_length", "max_len", "max_seq_len", "max_seq_length", "max_sequence_length",
        "block_size", "context_length", "max_positions", "max_position_embeddings",
    }
)  # fmt: skip
TOKENIZER_WORDS = frozenset({"tokenizer", "tokeniser", "tok"})
DYNAMIC_PADDING = ("True", '"longest"', "'longest'")
HELPER_SOURCE = '''
def pad_to_bucket(padded, multiple, value, batch_first=False, max_length=None):
    """Pad the time dimension of a pad_sequence() result up to the next multiple of ``multiple``
    (at most ``max_length``, never below the batch's own length), so that XLA compiles one graph
    per length bucket instead of one per batch length."""
    time_dim = 1 if batch_first else 0
    length = padded.size(time_dim)
    target = -(-length // multiple) * multiple
    if max_length is not None:
        target = max(min(target, max_length), length)
    padding = [0, 0] * (padded.dim() - time_dim - 1) + [0, target - length]
    return torch.nn.functional.pad(padded, padding, value=value)
'''


class StaticPadding(TpuCodemod):
    """
    What it does
        Pads the variable-length batches a script builds to a small, fixed set of lengths:

        - every ``torch.nn.utils.rnn.pad_sequence(...)`` result (by qualified name; a function
          of your own called ``pad_sequence`` is left alone) is passed through
          ``pad_to_bucket(...)``, a helper added to the module after its imports, which pads the
          time dimension up to the next multiple of the ``bucket_size`` option (default 64),
          capped at the maximum length. The extra positions get the *same* padding value that
          call already uses (``padding_value=-100`` for labels stays -100, a mask padded with
          False stays False), on the same side (``pad_sequence`` pads at the end; calls with
          ``padding_side="left"`` are left alone). A mask the script computes afterwards from
          the padded tensor (``tokens != PAD``, ``tokens.size(1)``) follows automatically.
        - the maximum length is the ``max_length`` option when set, else a module constant
          named like ``MAX_LEN``, ``max_length``, ``BLOCK_SIZE`` or ``max_seq_len``; without one
          the rule adds ``TPU_MAX_SEQ_LEN = 512`` and finding TPU232 at the call: check it
          against the model's limit (a positional embedding table). A batch longer than the
          cap is never cut, only not rounded up.
        - ``tokenizer(..., padding=True)`` or ``padding="longest"`` (a callee whose name says
          tokenizer, in a file that imports ``transformers``) becomes
          ``padding="max_length"`` when the call passes ``max_length=`` (one shape), else keeps
          its padding and gets ``pad_to_multiple_of=<bucket_size>``: buckets, without
          inventing a truncation length that would change the data.

        ``DataCollatorWithPadding`` and masks built from ``max(lengths)`` instead of the padded
        tensor are not handled.

    Why
        XLA compiles one graph per input shape, so padding each batch to its own longest
        sequence compiles a new graph for nearly every batch (pytorch/xla #2120, #5058). With
        buckets the number of graphs is at most ``max_length / bucket_size``. The extra
        positions carry the padding value the loss already ignores (``ignore_index``) or the
        attention already masks, so the loss stays the same.

    Example
        Before::

            def collate(batch):
                tokens = pad_sequence([b[0] for b in batch], batch_first=True, padding_value=PAD)
                labels = pad_sequence([b[1] for b in batch], batch_first=True, padding_value=-100)
                return tokens, labels

        After::

            def collate(batch):
                tokens = pad_to_bucket(
                    pad_sequence([b[0] for b in batch], batch_first=True, padding_value=PAD),
                    multiple=64,
                    value=PAD,
                    batch_first=True,
                    max_length=MAX_LEN,
                )
                labels = pad_to_bucket(...)  # the same, with value -100
                return tokens, labels
    """

    CODE = "TPU114"
    NAME = "static-padding"
    SUMMARY = "Pad pad_sequence() batches and tokenizer padding to length buckets (one graph each)"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("pad_sequence", "padding")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.mentions("pad_sequence", HELPER) or (
            facts.mentions("padding") and facts.uses("transformers")
        )

    OPTIONS = {"bucket_size": 64, "max_length": None}
    FINDINGS = {
        MAX_LENGTH_MISSING: FindingDoc(
            "padded to buckets up to TPU_MAX_SEQ_LEN, a guessed maximum sequence length",
            why="Each padded length compiles its own graph: batches are padded up to multiples "
            "of the bucket size, capped at the maximum length. No constant of the file tells "
            "that maximum, so tpu-migrate added TPU_MAX_SEQ_LEN = 512.",
            what_to_do="Set TPU_MAX_SEQ_LEN to the longest sequence the data or the model allows "
            "(a positional embedding table of N rows needs TPU_MAX_SEQ_LEN <= N), or set the "
            "max_length option of TPU114 in [tool.tpu-migrate.options.TPU114].",
        ),
    }

    VALID = [
        Valid(
            "import torch\n\n\n"
            "def pad_sequence(seqs, value):\n"
            "    return [s + [value] * (8 - len(s)) for s in seqs]\n\n\n"
            "batch = pad_sequence(rows, 0)\n",
            why="a function of the file named pad_sequence is not torch's",
        ),
        Valid(
            "from torch.nn.utils.rnn import pad_sequence\n\n"
            'ids = pad_sequence(seqs, batch_first=True, padding_side="left")\n'
            "encoded = encoder(text, padding=True)\n",
            why="left padding is left alone; a callee that is no tokenizer keeps its padding",
        ),
    ]

    INVALID = [
        Invalid(
            "import torch.nn.utils.rnn as rnn_utils\n\n\n"
            "def collate_fn(samples):\n"
            "    return rnn_utils.pad_sequence(samples)\n",
            "import torch.nn.utils.rnn as rnn_utils\n"
            "import torch\n\n"
            "# Longest sequence padded to a bucket (see TPU232): set it to the data's or model's "
            "limit.\n"
            "TPU_MAX_SEQ_LEN = 512\n\n\n"
            "def pad_to_bucket(padded, multiple, value, batch_first=False, max_length=None):\n"
            '    """Pad the time dimension of a pad_sequence() result up to the next multiple of '
            "``multiple``\n"
            "    (at most ``max_length``, never below the batch's own length), so that XLA "
            "compiles one graph\n"
            '    per length bucket instead of one per batch length."""\n'
            "    time_dim = 1 if batch_first else 0\n"
            "    length = padded.size(time_dim)\n"
            "    target = -(-length // multiple) * multiple\n"
            "    if max_length is not None:\n"
            "        target = max(min(target, max_length), length)\n"
            "    padding = [0, 0] * (padded.dim() - time_dim - 1) + [0, target - length]\n"
            "    return torch.nn.functional.pad(padded, padding, value=value)\n\n\n"
            "def collate_fn(samples):\n"
            "    # TODO(tpu-migrate): TPU232 padded up to TPU_MAX_SEQ_LEN, a guessed maximum: "
            "set it to the real one\n"
            "    return pad_to_bucket(rnn_utils.pad_sequence(samples), multiple=64, value=0, "
            "max_length=TPU_MAX_SEQ_LEN)\n",
            findings=[MAX_LENGTH_MISSING],
            why="no maximum length in the file: a named constant and a finding",
        ),
        Invalid(
            "import transformers\n\n"
            "tokenizer = transformers.AutoTokenizer.from_pretrained(name)\n"
            "fixed = tokenizer(texts, padding=True, truncation=True, max_length=128)\n"
            'longest = tokenizer(texts, padding="longest", return_tensors="pt")\n'
            "already = tokenizer(texts, padding=True, pad_to_multiple_of=8)\n",
            "import transformers\n\n"
            "tokenizer = transformers.AutoTokenizer.from_pretrained(name)\n"
            'fixed = tokenizer(texts, padding="max_length", truncation=True, max_length=128)\n'
            'longest = tokenizer(texts, padding="longest", return_tensors="pt", '
            "pad_to_multiple_of=64)\n"
            "already = tokenizer(texts, padding=True, pad_to_multiple_of=8)\n",
            why="a known max_length gives one shape; otherwise buckets without truncation",
        ),
    ]

    # ------------------------------------------------------------------ planning
    def visit_Module(self, node: cst.Module) -> bool:
        self.index = ModuleIndex(self, node)
        self.wrapped: dict[int, cst.Call] = {}  # id(pad_sequence call) -> its replacement
        self.tokenizer_calls: set[int] = set()
        self.needs_constant = False
        if self._helper_name_taken(node):
            return False
        max_length = self._max_length(node)
        for call in self.index.calls:
            if self._is_unwrapped_pad_sequence(call):
                self._plan_bucket_padding(call, max_length)
            elif self._is_helper_call_with_guessed_maximum(call):
                self._flag_guessed_maximum(call)  # a second run keeps reporting it
            elif self._is_dynamic_tokenizer_call(call):
                self.tokenizer_calls.add(id(call))
        return True

    def _helper_name_taken(self, module: cst.Module) -> bool:
        """``pad_to_bucket`` names something other than the helper this rule writes."""
        scope = self.get_metadata(ScopeProvider, module, None)
        if scope is None or HELPER not in scope:
            return False
        return not all(
            isinstance(assignment.node, cst.FunctionDef)
            and code_of(assignment.node.params).startswith("padded, multiple, value")
            for assignment in scope[HELPER]
        )

    def _max_length(self, module: cst.Module) -> cst.BaseExpression:
        configured = self.option("max_length")
        if configured is not None:
            return cst.Integer(str(int(configured)))
        for statement in module.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                    and small.targets[0].target.value.lower() in MAX_LENGTH_NAMES
                    and isinstance(small.value, cst.Integer)
                ):
                    return cst.Name(small.targets[0].target.value)
        return cst.Name(MAX_LENGTH_CONSTANT)

    def _is_unwrapped_pad_sequence(self, call: cst.Call) -> bool:
        if not self.is_name(call.func, *PAD_SEQUENCE):
            return False
        side = _argument(call, "padding_side")
        if side is not None and code_of(side).strip("\"'") != "right":
            return False
        holder = self.index.parent(self.index.parent(call) or call)
        return not (_is_helper_call(holder) and self.index.parent(call) is holder.args[0])

    def _is_helper_call_with_guessed_maximum(self, call: cst.Call) -> bool:
        limit = _argument(call, "max_length")
        return (
            _is_helper_call(call)
            and isinstance(limit, cst.Name)
            and limit.value == MAX_LENGTH_CONSTANT
        )

    def _plan_bucket_padding(self, call: cst.Call, max_length: cst.BaseExpression) -> None:
        value = _argument(call, "padding_value", 2) or cst.Integer("0")
        batch_first = _argument(call, "batch_first", 1)
        if isinstance(value, cst.Call) or isinstance(batch_first, cst.Call):
            return  # evaluating them twice could have side effects
        args = [
            cst.Arg(call),
            _keyword_arg("multiple", cst.Integer(str(int(self.option("bucket_size"))))),
            _keyword_arg("value", value),
        ]
        if batch_first is not None and code_of(batch_first) != "False":
            args.append(_keyword_arg("batch_first", batch_first))
        args.append(_keyword_arg("max_length", max_length))
        self.wrapped[id(call)] = cst.Call(cst.Name(HELPER), args)
        if isinstance(max_length, cst.Name) and max_length.value == MAX_LENGTH_CONSTANT:
            self.needs_constant = True
            self._flag_guessed_maximum(call)

    def _flag_guessed_maximum(self, call: cst.Call) -> None:
        self.flag(
            call,
            MAX_LENGTH_MISSING,
            f"padded up to {MAX_LENGTH_CONSTANT}, a guessed maximum: set it to the real one",
        )

    def _is_dynamic_tokenizer_call(self, call: cst.Call) -> bool:
        padding = _argument(call, "padding")
        if padding is None or code_of(padding) not in DYNAMIC_PADDING:
            return False
        if _argument(call, "pad_to_multiple_of") is not None:
            return False
        callee = dotted_name(call.func)
        if callee is None or not self.imports_module("transformers"):
            return False
        return any(identifier_words(part) & TOKENIZER_WORDS for part in callee.split("."))

    # ------------------------------------------------------------------ rewriting
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if id(original_node) in self.wrapped:
            self.record_rewrite()
            replacement = self.wrapped[id(original_node)]
            return replacement.with_changes(
                args=[replacement.args[0].with_changes(value=updated_node), *replacement.args[1:]]
            )
        if id(original_node) in self.tokenizer_calls:
            self.record_rewrite()
            return _fixed_tokenizer_padding(updated_node, int(self.option("bucket_size")))
        return updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self.wrapped or self._defines_helper(original_node):
            return updated_node
        self.require_import(ImportSpec("torch"))
        body = list(updated_node.body)
        at = after_imports(body)
        new: list[cst.BaseStatement] = []
        if self.needs_constant and not _assigns(original_node, MAX_LENGTH_CONSTANT):
            new.append(
                cst.parse_statement(f"{MAX_LENGTH_CONSTANT} = {DEFAULT_MAX_LENGTH}\n").with_changes(
                    leading_lines=[
                        cst.EmptyLine(),
                        cst.EmptyLine(
                            comment=cst.Comment(
                                "# Longest sequence padded to a bucket (see TPU232): set it to "
                                "the data's or model's limit."
                            )
                        ),
                    ]
                )
            )
        helper = cst.parse_module(HELPER_SOURCE).body[0]
        new.append(helper.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))
        if at < len(body):
            follower = body[at]
            blank = [cst.EmptyLine(), cst.EmptyLine()]
            kept = list(follower.leading_lines)
            while kept and kept[0].comment is None:
                kept.pop(0)
            body[at] = follower.with_changes(leading_lines=[*blank, *kept])
        body[at:at] = new
        return updated_node.with_changes(body=body)

    @staticmethod
    def _defines_helper(module: cst.Module) -> bool:
        return any(
            isinstance(statement, cst.FunctionDef) and statement.name.value == HELPER
            for statement in module.body
        )


def _is_helper_call(node: cst.CSTNode | None) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == HELPER
        and bool(node.args)
    )


def _argument(call: cst.Call, keyword: str, position: int | None = None):
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = positional_arguments(call)
    if position is not None and position < len(positional):
        return positional[position].value
    return None


def _keyword_arg(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )


def _fixed_tokenizer_padding(call: cst.Call, bucket_size: int) -> cst.Call:
    """``padding="max_length"`` when the call bounds the length, else ``pad_to_multiple_of``."""
    if _argument(call, "max_length") is not None:
        return call.with_changes(
            args=[
                (
                    arg.with_changes(value=cst.SimpleString('"max_length"'))
                    if arg.keyword is not None and arg.keyword.value == "padding"
                    else arg
                )
                for arg in call.args
            ]
        )
    return with_keyword_argument(call, "pad_to_multiple_of", cst.Integer(str(bucket_size)))


def _assigns(module: cst.Module, name: str) -> bool:
    return any(
        isinstance(statement, cst.SimpleStatementLine)
        and any(
            isinstance(small, cst.Assign) and any(code_of(t.target) == name for t in small.targets)
            for small in statement.body
        )
        for statement in module.body
    )
