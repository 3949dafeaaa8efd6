"""What an expression is, as far as one file can tell: a torch tensor, a boolean mask, a Python
scalar, a mask with exactly the shape of some tensor (TPU116 masked writes, TPU117 XLA hazards).

Every question answers "yes, by one of the patterns below" or "don't know"; callers treat "don't
know" as "leave the code alone". Names are followed through their plain assignments
(``ModuleIndex.source_of``) a few levels deep; loop variables and attributes of other objects are
not followed.
"""

from __future__ import annotations

import libcst as cst

from ._base import TpuCodemod, code_of, dotted_name
from ._loops import ModuleIndex, positional_arguments, walk_code

COMPARISONS = (
    cst.LessThan,
    cst.GreaterThan,
    cst.LessThanEqual,
    cst.GreaterThanEqual,
    cst.Equal,
    cst.NotEqual,
)
ARITHMETIC = (
    cst.Add,
    cst.Subtract,
    cst.Multiply,
    cst.Divide,
    cst.FloorDivide,
    cst.Modulo,
    cst.Power,
    cst.MatrixMultiply,
)
BITWISE = (cst.BitAnd, cst.BitOr, cst.BitXor)
# Modules whose lower-case functions return tensors (``torch.zeros``, ``F.relu``).
TENSOR_MODULES = frozenset(
    {"torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft"}
)
NON_TENSOR_FUNCTIONS = frozenset(
    {
        "load", "save", "device", "numel", "typename", "no_grad", "enable_grad",
        "inference_mode", "compile", "autocast", "finfo", "iinfo", "broadcast_shapes",
        "split", "chunk", "unbind", "tensor_split", "meshgrid", "manual_seed", "seed",
        "initial_seed", "use_deterministic_algorithms", "result_type", "promote_types",
    }
)  # fmt: skip
TENSOR_CLASSES = frozenset(
    {"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.Tensor", "torch.BoolTensor",
     "torch.FloatTensor", "torch.LongTensor", "torch.IntTensor"}
)  # fmt: skip
# nn modules whose call returns a tuple or that are containers, not layers.
NON_TENSOR_MODULES = frozenset(
    {"LSTM", "GRU", "RNN", "MultiheadAttention", "ModuleList", "ModuleDict", "ParameterList",
     "ParameterDict", "Transformer"}
)  # fmt: skip
NON_TENSOR_METHODS = frozenset(
    {
        "item", "tolist", "numpy", "dim", "size", "numel", "nelement", "element_size", "stride",
        "data_ptr", "get_device", "storage", "untyped_storage", "storage_offset", "type",
        "split", "chunk", "unbind", "tensor_split", "backward", "register_hook", "cpu_",
    }
)  # fmt: skip
TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})
# Methods that torch tensors have and modules, numpy arrays and lists do not: their result is a
# tensor whatever the receiver is known to be (``data.view(b, -1).t().contiguous()``).
TENSOR_ONLY_METHODS = frozenset(
    {"contiguous", "narrow", "unsqueeze", "view_as", "expand_as", "masked_fill",
     "index_select", "detach", "t", "permute"}
)  # fmt: skip
# Functions / methods whose result has the shape of their first argument / receiver.
ELEMENTWISE = frozenset(
    {
        "abs", "neg", "float", "double", "half", "bfloat16", "int", "long", "short", "detach",
        "clone", "contiguous", "sigmoid", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos",
        "tanh", "relu", "round", "floor", "ceil", "trunc", "sign", "clamp", "clip", "square",
        "reciprocal", "pow", "to", "type_as", "nan_to_num", "softmax", "log_softmax",
    }
)  # fmt: skip
PREDICATES = frozenset(
    {"isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_not", "bool"}
)
COMPARE_FUNCTIONS = frozenset(
    {"eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal",
     "not_equal"}
)  # fmt: skip
LOGICAL_FUNCTIONS = frozenset({"logical_and", "logical_or", "logical_xor"})
# ``torch.arange(n).to(x.device)``: a new tensor moved at once, where the user chose.
MOVES_AT_ONCE = frozenset({"to", "cuda", "type_as"})
LIKE_FACTORIES = frozenset(
    {"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
     "randint_like"}
)  # fmt: skip
SCALAR_CONSTANTS = frozenset(
    {"math.inf", "math.nan", "math.pi", "math.e", "numpy.inf", "numpy.nan"}
)
SPECIAL_FLOATS = frozenset({"inf", "-inf", "+inf", "nan", "infinity", "-infinity"})
NN_MODULE_BASES = ("torch.nn.Module", "torch.nn.modules.module.Module")


def bare(expr: cst.BaseExpression) -> str:
    """The code of ``expr`` without its own parentheses, to compare two spellings."""
    if getattr(expr, "lpar", None):
        expr = expr.with_changes(lpar=[], rpar=[])
    return code_of(expr)


class TensorFacts:
    """Answers about expressions of one module; built on the rule's ``ModuleIndex``."""

    def __init__(self, rule: TpuCodemod, index: ModuleIndex) -> None:
        self.rule = rule
        self.index = index
        self._assumed: set[tuple[int, str]] = set()  # names whose tensor-ness is being decided
        self._across_calls = False

    # ------------------------------------------------------------------ torch names
    def torch_function(self, func: cst.BaseExpression) -> str | None:
        """``zeros`` for ``torch.zeros`` / ``F.relu`` -> ``relu``: a tensor-returning function."""
        for name in self.rule.qualified_names(func):
            module, _, last = name.rpartition(".")
            if module in TENSOR_MODULES and last[:1].islower():
                return last
        return None

    def is_torch_dtype(self, expr: cst.BaseExpression, dtype: str | None = None) -> bool:
        names = self.rule.qualified_names(expr)
        if dtype is not None:
            return f"torch.{dtype}" in names
        return any(n.startswith("torch.") and n.count(".") == 1 for n in names) and isinstance(
            expr, cst.Attribute
        )

    def method_of(self, call: cst.BaseExpression) -> tuple[cst.BaseExpression, str] | None:
        """(receiver, method) for ``receiver.method(...)`` when that is not a module function."""
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
            return None
        if any(n.startswith("torch") for n in self.rule.qualified_names(call.func)):
            return None
        return call.func.value, call.func.attr.value

    def lands_on_cpu(self, factory: cst.Call) -> bool:
        """A factory call without ``device=`` (nor ``**kwargs`` that may hold it) whose
        tensor is not moved at once: it is made on the CPU."""
        if any(
            arg.star == "**" or (arg.keyword and arg.keyword.value == "device")
            for arg in factory.args
        ):
            return False
        attribute = self.index.parent(factory)
        return not (isinstance(attribute, cst.Attribute) and attribute.attr.value in MOVES_AT_ONCE)

    # ------------------------------------------------------------------ tensors
    def is_tensor(self, expr: cst.BaseExpression, depth: int = 3) -> bool:
        if depth < 0:
            return False
        if isinstance(expr, cst.Call):
            return self._call_is_tensor(expr, depth)
        if isinstance(expr, cst.Name):
            return self._name_is_tensor(expr, depth)
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in TENSOR_ATTRIBUTES:
                return self.is_tensor(expr.value, depth)
            return self._bindings_all(expr, depth, self.is_tensor)
        if isinstance(expr, cst.Subscript):
            return self.is_tensor(expr.value, depth)
        if isinstance(expr, cst.BinaryOperation) and isinstance(
            expr.operator, (*ARITHMETIC, *BITWISE)
        ):
            return self.is_tensor(expr.left, depth) or self.is_tensor(expr.right, depth)
        if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
            return self.is_tensor(expr.expression, depth)
        if isinstance(expr, cst.Comparison) and _is_elementwise_comparison(expr):
            operands = [expr.left, *(c.comparator for c in expr.comparisons)]
            return any(self.is_tensor(operand, depth) for operand in operands)
        return False

    def is_tensor_across_calls(self, expr: cst.BaseExpression, depth: int = 8) -> bool:
        """``is_tensor``, also following what this module's functions return, what every call
        of a function passes for a parameter, the last assignment of a name before it in
        straight-line code, and methods only tensors have. A deeper question than
        ``is_tensor``, for rewrites that are wrong on anything but a tensor."""
        previous, self._across_calls = self._across_calls, True
        try:
            return self.is_tensor(expr, depth)
        finally:
            self._across_calls = previous

    def _call_is_tensor(self, call: cst.Call, depth: int) -> bool:
        if self._across_calls and (
            (self.method_of(call) or (None, ""))[1] in TENSOR_ONLY_METHODS
            or self._returns_tensors(call.func, depth)
        ):
            return True
        function = self.torch_function(call.func)
        if function is not None:
            return function not in NON_TENSOR_FUNCTIONS and not function.startswith(
                ("is_", "get_", "set_")
            )
        if not self.rule.qualified_names(call.func).isdisjoint(TENSOR_CLASSES):
            return True
        method = self.method_of(call)
        if method is not None:
            receiver, name = method
            if name in NON_TENSOR_METHODS or name.startswith("is_"):
                return False
            if self.is_tensor(receiver, depth - 1):
                return True
        return self.is_layer(call.func, depth - 1)

    def is_layer(self, func: cst.BaseExpression, depth: int = 2) -> bool:
        """``func`` is an ``nn`` layer (or a model class of this file) whose call returns a
        tensor: ``criterion``, ``self.fc``, ``model``."""
        if depth < 0:
            return False
        values = self.index.binding_values(func)
        return bool(values) and all(self._builds_layer(value, depth) for value in values)

    def _builds_layer(self, value: cst.BaseExpression, depth: int) -> bool:
        method = self.method_of(value)
        if method is not None and method[1] == "to":
            return self._builds_layer(method[0], depth) or self.is_layer(method[0], depth - 1)
        if not isinstance(value, cst.Call):
            return False
        for name in self.rule.qualified_names(value.func):
            module, _, last = name.rpartition(".")
            if module.startswith("torch.nn") and last[:1].isupper():
                return last not in NON_TENSOR_MODULES and last not in ("Parameter",)
        cls = self.module_class(value.func)
        return cls is not None and self.is_nn_module_class(cls)

    def module_class(self, func: cst.BaseExpression) -> cst.ClassDef | None:
        """The class of this module that ``func`` names."""
        if not isinstance(func, cst.Name):
            return None
        for statement in self.index.module.body:
            if isinstance(statement, cst.ClassDef) and statement.name.value == func.value:
                return statement
        return None

    def is_nn_module_class(self, cls: cst.ClassDef, depth: int = 3) -> bool:
        for base in cls.bases:
            names = self.rule.qualified_names(base.value)
            if any(n.startswith("torch.nn.") for n in names):
                return True
            parent = self.module_class(base.value)
            if depth > 0 and parent is not None and self.is_nn_module_class(parent, depth - 1):
                return True
        return False

    def _name_is_tensor(self, name: cst.Name, depth: int) -> bool:
        """Every assignment of ``name`` in its scope is a tensor parameter or a tensor value
        (``def forward(self, x): x = x * 2`` has both)."""
        bound = self.rule.bindings_of(name)
        if bound is None:
            return False
        scope, assignments = bound
        key = (id(scope), name.value)
        if key in self._assumed:
            return True  # ``x = x * 2`` is a tensor when the other bindings of x are
        if not assignments:
            return False
        self._assumed.add(key)
        try:
            if self._assignments_are_tensors(assignments, depth):
                return True
            if not self._across_calls:
                return False
            value = self._value_reaching(name, assignments)
            return value is not None and self.is_tensor(value, depth - 1)
        finally:
            self._assumed.discard(key)

    def _value_reaching(self, name: cst.Name, assignments) -> cst.BaseExpression | None:
        """The value of the assignment of ``name`` that certainly reaches it: the last one
        before it at the top level of the same function, with no later one in a loop around
        ``name`` (which would reach it on the next pass)."""
        owner = self.index.owner(name)
        if not isinstance(owner, cst.FunctionDef):
            return None
        bindings = []
        for assignment in assignments:
            node = getattr(assignment, "node", None)
            if isinstance(node, cst.Param):
                continue
            binding = self.index.bindings.get(id(node))
            if binding is None or binding.owner is not owner:
                return None  # a for target, a with-as, a global: not followed
            bindings.append(binding)
        line = self._line(name)
        before = [b for b in bindings if self._line(b.statement) < line]
        if not before:
            return None
        last = max(before, key=lambda b: self._line(b.statement))
        if self.index.parent(last.statement) is not owner.body:
            return None
        loops = self.index.loops_around(name)
        for binding in bindings:
            if binding is not last and self._line(binding.statement) > self._line(last.statement):
                if any(
                    a is loop for a in self.index.ancestors(binding.statement) for loop in loops
                ):
                    return None
        return last.value

    def _returns_tensors(self, func: cst.BaseExpression, depth: int) -> bool:
        """``func`` names a function of this module (not a method, not a generator) with at
        least one ``return`` and a tensor in every one."""
        if not isinstance(func, cst.Name) or depth < 0:
            return False
        bound = self.rule.bindings_of(func)
        if bound is None or len(bound[1]) != 1:
            return False
        function = getattr(bound[1][0], "node", None)
        if not isinstance(function, cst.FunctionDef) or self.index.enclosing_class(function):
            return False
        key = (id(function), "<returns>")
        if key in self._assumed:
            return False
        nodes = list(walk_code(function.body))
        if any(isinstance(n, (cst.Yield, cst.Await)) for n in nodes):
            return False
        returns = [n for n in nodes if isinstance(n, cst.Return)]
        if not returns or any(r.value is None for r in returns):
            return False
        self._assumed.add(key)
        try:
            return all(self.is_tensor(r.value, depth - 1) for r in returns)
        finally:
            self._assumed.discard(key)

    def _assignments_are_tensors(self, assignments, depth: int) -> bool:
        for assignment in assignments:
            node = getattr(assignment, "node", None)
            if isinstance(node, cst.Param):
                function = self.index.owner(node)
                if not (
                    isinstance(function, cst.FunctionDef)
                    and (
                        self.is_tensor_parameter(node, function)
                        or (self._across_calls and self._passed_tensors(function, node, depth))
                    )
                ):
                    return False
                continue
            binding = self.index.bindings.get(id(node))
            if binding is None or not self.is_tensor(binding.value, depth - 1):
                return False
        return True

    def _passed_tensors(self, function: cst.FunctionDef, param: cst.Param, depth: int) -> bool:
        """Every call of ``function`` in this module passes a tensor for ``param``."""
        calls = self.index.calls_of(function)
        passed = self.index.call_arguments(function, param)
        return (
            bool(calls)
            and len(passed) == len(calls)
            and all(self.is_tensor(value, depth - 1) for value in passed)
        )

    def _bindings_all(self, expr: cst.BaseExpression, depth: int, test) -> bool:
        values = self.index.binding_values(expr)
        return bool(values) and all(test(value, depth - 1) for value in values)

    def is_tensor_parameter(self, param: cst.Param, function: cst.FunctionDef | None) -> bool:
        """Annotated ``torch.Tensor``, or an input of an ``nn.Module``'s ``forward``."""
        if param.annotation is not None:
            annotation = param.annotation.annotation
            if "torch.Tensor" in self.rule.qualified_names(annotation) or dotted_name(
                annotation
            ) in ("Tensor", "torch.Tensor"):
                return True
        if function is None or function.name.value != "forward":
            return False
        cls = self.index.enclosing_class(function)
        params = function.params.params
        return (
            cls is not None
            and self.is_nn_module_class(cls)
            and bool(params)
            and param is not params[0]
            and param.star == ""
            and param in params
        )

    # ------------------------------------------------------------------ scalars
    def is_scalar(self, expr: cst.BaseExpression, depth: int = 2) -> bool:
        """A Python number (or bool): a literal, ``float("-inf")``, ``math.inf``,
        ``torch.finfo(t.dtype).min``, or a name only ever bound to one."""
        if depth < 0:
            return False
        if isinstance(expr, (cst.Integer, cst.Float)):
            return True
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False"):
                return True
            return self._bindings_all(expr, depth, self.is_scalar)
        if isinstance(expr, cst.UnaryOperation) and isinstance(
            expr.operator, (cst.Minus, cst.Plus)
        ):
            return self.is_scalar(expr.expression, depth)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, ARITHMETIC):
            return self.is_scalar(expr.left, depth) and self.is_scalar(expr.right, depth)
        if isinstance(expr, cst.Attribute):
            if not self.rule.qualified_names(expr).isdisjoint(SCALAR_CONSTANTS):
                return True
            return (
                expr.attr.value in ("min", "max", "eps", "tiny")
                and isinstance(expr.value, cst.Call)
                and self.rule.is_name(expr.value.func, "torch.finfo", "torch.iinfo")
            )
        if isinstance(expr, cst.Call) and self.rule.is_name(expr.func, "builtins.float"):
            args = expr.args
            if len(args) == 1 and isinstance(args[0].value, cst.SimpleString):
                return str(args[0].value.evaluated_value).strip().lower() in SPECIAL_FLOATS
            return len(args) == 1 and isinstance(args[0].value, (cst.Integer, cst.Float))
        return False

    # ------------------------------------------------------------------ boolean masks
    def is_bool_mask(self, expr: cst.BaseExpression, depth: int = 2) -> bool:
        """A boolean tensor of unknown shape: a comparison, ``~m``, ``m & n``, ``torch.isnan(t)``,
        ``t.bool()``, a factory with ``dtype=torch.bool``, or a name bound to one of these."""
        if depth < 0:
            return False
        if isinstance(expr, cst.Comparison):
            return _is_elementwise_comparison(expr) and len(expr.comparisons) == 1
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self.is_bool_mask(expr.expression, depth)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, BITWISE):
            return self.is_bool_mask(expr.left, depth) or self.is_bool_mask(expr.right, depth)
        if isinstance(expr, cst.Name):
            return self._bindings_all(expr, depth, self.is_bool_mask)
        if not isinstance(expr, cst.Call):
            return False
        function = self.torch_function(expr.func)
        if function in PREDICATES | COMPARE_FUNCTIONS | LOGICAL_FUNCTIONS | {"isin", "isclose"}:
            return True
        if function is not None and self._has_bool_dtype(expr):
            return True
        method = self.method_of(expr)
        if method is None:
            return False
        receiver, name = method
        if name in PREDICATES | COMPARE_FUNCTIONS | LOGICAL_FUNCTIONS:
            return True
        return name == "to" and self._has_bool_dtype(expr)

    def _has_bool_dtype(self, call: cst.Call) -> bool:
        for arg in call.args:
            if (arg.keyword is None or arg.keyword.value == "dtype") and self.is_torch_dtype(
                arg.value, "bool"
            ):
                return True
        return False

    def is_mask_shaped_like(
        self, expr: cst.BaseExpression, shapes: frozenset[str], at: cst.CSTNode, depth: int = 2
    ) -> bool:
        """A boolean tensor with exactly the shape of the tensors spelled ``shapes``, built
        elementwise from them (``x < 0``, ``torch.isnan(x)``, ``~m & (x != pad)``), so that
        ``x.masked_fill_(m, v)`` writes the same elements as ``x[m] = v``."""
        if depth < 0:
            return False
        if isinstance(expr, cst.Name):
            value = self.single_value_before(expr, at, shapes)
            return value is not None and self.is_mask_shaped_like(value, shapes, at, depth - 1)
        if isinstance(expr, cst.Comparison):
            return (
                _is_elementwise_comparison(expr)
                and len(expr.comparisons) == 1
                and self._elementwise_pair(expr.left, expr.comparisons[0].comparator, shapes, at)
            )
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self.is_mask_shaped_like(expr.expression, shapes, at, depth)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, BITWISE):
            return self.is_mask_shaped_like(
                expr.left, shapes, at, depth
            ) and self.is_mask_shaped_like(expr.right, shapes, at, depth)
        if isinstance(expr, cst.Call):
            return self._call_is_mask_shaped_like(expr, shapes, at, depth)
        return False

    def _call_is_mask_shaped_like(
        self, call: cst.Call, shapes: frozenset[str], at: cst.CSTNode, depth: int
    ) -> bool:
        function = self.torch_function(call.func)
        method = self.method_of(call) if function is None else None
        if function is not None:
            operands = [arg.value for arg in positional_arguments(call)]
            name = function
        elif method is not None:
            operands = [method[0], *(arg.value for arg in positional_arguments(call))]
            name = method[1]
        else:
            return False
        if len(operands) != len(call.args) + (method is not None):
            return False  # keywords (``out=``, ``dtype=``) other than the cases below
        if name in PREDICATES and len(operands) == 1:
            return self.is_elementwise_of(operands[0], shapes, at)
        if name in COMPARE_FUNCTIONS and len(operands) == 2:
            return self._elementwise_pair(operands[0], operands[1], shapes, at)
        if name in LOGICAL_FUNCTIONS and len(operands) == 2:
            return all(
                self.is_mask_shaped_like(operand, shapes, at, depth)
                or self.is_elementwise_of(operand, shapes, at)
                for operand in operands
            )
        return False

    def _elementwise_pair(self, left, right, shapes: frozenset[str], at: cst.CSTNode) -> bool:
        left_shaped = self.is_elementwise_of(left, shapes, at)
        right_shaped = self.is_elementwise_of(right, shapes, at)
        return (left_shaped and (right_shaped or self.is_scalar(right))) or (
            right_shaped and self.is_scalar(left)
        )

    def is_elementwise_of(
        self, expr: cst.BaseExpression, shapes: frozenset[str], at: cst.CSTNode, depth: int = 2
    ) -> bool:
        """``expr`` has the shape of the tensors ``shapes``: one of them, ``x.abs()``,
        ``x.float() * 2``, ``torch.rand_like(x)``."""
        if depth < 0:
            return False
        if bare(expr) in shapes:
            return True
        if isinstance(expr, cst.Name):
            value = self.single_value_before(expr, at, shapes)
            return value is not None and self.is_elementwise_of(value, shapes, at, depth - 1)
        if isinstance(expr, cst.UnaryOperation) and isinstance(
            expr.operator, (cst.Minus, cst.Plus)
        ):
            return self.is_elementwise_of(expr.expression, shapes, at, depth)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, ARITHMETIC):
            if isinstance(expr.operator, cst.MatrixMultiply):
                return False
            left = self.is_elementwise_of(expr.left, shapes, at, depth)
            right = self.is_elementwise_of(expr.right, shapes, at, depth)
            return (left or self.is_scalar(expr.left)) and (right or self.is_scalar(expr.right))
        if not isinstance(expr, cst.Call):
            return False
        function = self.torch_function(expr.func)
        if function is not None:
            positional = positional_arguments(expr)
            if function in LIKE_FACTORIES and positional:
                return self.is_elementwise_of(positional[0].value, shapes, at, depth)
            if function in ELEMENTWISE and positional:
                rest = [arg.value for arg in expr.args if arg is not positional[0]]
                return self.is_elementwise_of(
                    positional[0].value, shapes, at, depth
                ) and self._all_scalar_or_dtype(rest)
            return False
        method = self.method_of(expr)
        if method is not None and method[1] in ELEMENTWISE:
            return self.is_elementwise_of(method[0], shapes, at, depth) and (
                self._all_scalar_or_dtype([arg.value for arg in expr.args])
            )
        return False

    def _all_scalar_or_dtype(self, values) -> bool:
        return all(self.is_scalar(value) or self.is_torch_dtype(value) for value in values)

    def single_value_before(
        self, name: cst.Name, at: cst.CSTNode, unchanged: frozenset[str] = frozenset()
    ) -> cst.BaseExpression | None:
        """The value of ``name``'s only assignment, when it runs in the same function before
        ``at`` and none of the names ``unchanged`` is rebound in between."""
        source = self.index.source_of(name)
        if source is None or len(source.bindings) != 1:
            return None
        binding = source.bindings[0]
        if binding.owner is not self.index.owner(at):
            return None
        start, end = self._line(binding.statement), self._line(at)
        if not start < end:
            return None
        for other in self.index.all_bindings:
            if (
                other.owner is binding.owner
                and dotted_name(other.target) in unchanged
                and start < self._line(other.statement) < end
            ):
                return None
        return binding.value

    def _line(self, node: cst.CSTNode) -> int:
        return self.rule.position(node)[0]


def _is_elementwise_comparison(comparison: cst.Comparison) -> bool:
    return all(isinstance(c.operator, COMPARISONS) for c in comparison.comparisons)
