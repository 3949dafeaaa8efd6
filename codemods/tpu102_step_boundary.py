"""TPU102: ``xm.optimizer_step`` for optimizer steps, and one graph cut per training step."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import TORCH_XLA, XM, FindingDoc, Invalid, Safety, TpuCodemod, Valid, code_of
from ._loops import (
    AUTOGRAD_FUNCTIONS,
    XLA_OPTIMIZER_STEP,
    ModuleIndex,
    calls,
    calls_in,
    last_identifier,
    may_contain_training_step,
    named_like_optimizer,
    new_statement,
    positional_arguments,
    refers_to,
    walk_code,
)
from ._statements import AppliesStatementEdits

# Wrapping the model in one of these already reduces gradients: keep ``optimizer.step()``.
SHARDING_WRAPPERS = (
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard",
    "torch.distributed.optim.ZeroRedundancyOptimizer",
    "torch_xla.distributed.fsdp.XlaFullyShardedDataParallel",
    "torch_xla.distributed.fsdp.xla_fully_sharded_data_parallel.XlaFullyShardedDataParallel",
    "torch_xla.experimental.spmd_fully_sharded_data_parallel.SpmdFullyShardedDataParallel",
    "torch_xla.distributed.zero_redundancy_optimizer.ZeroRedundancyOptimizer",
)
SYNCS = ("torch_xla.sync", "torch_xla.torch_xla.sync", "torch_xla.core.xla_model.mark_step")
SYNC_SPELLINGS = ("torch_xla.sync", "xm.mark_step")
# Context managers that cut the graph when the step's block ends.
STEP_CONTEXTS = ("torch_xla.debug.profiler.StepTrace", "torch_xla.step", "torch_xla.torch_xla.step")
COMPILERS = ("torch_xla.compile", "torch_xla.torch_xla.compile")
OPTIMIZER_PACKAGE = "torch.optim."
NOT_OPTIMIZER_PACKAGES = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")
FINDING = "TPU221"


class StepBoundary(AppliesStatementEdits, TpuCodemod):
    """
    What it does
        In training code:

        - ``optimizer.step()`` becomes ``xm.optimizer_step(optimizer)`` and
          ``optimizer.step(closure)`` becomes
          ``xm.optimizer_step(optimizer, optimizer_args={"closure": closure})``. Optimizers are
          names and attributes assigned from a ``torch.optim.*`` constructor (not
          ``torch.optim.lr_scheduler.*``), or named like one (``optimizer``, ``opt_d``,
          ``optimizerG``, ``self.optimizers[i]``) unless this file assigns them a scheduler or an
          instance of its own non-optimizer class. ``scheduler.step()``, ``env.step(a)`` and
          other ``step`` methods are left alone. When the file wraps the model in DDP, FSDP
          (torch or torch_xla) or uses ZeRO, ``optimizer.step()`` stays: gradients are already
          reduced there.
          So does the step of an optimizer a training framework manages (Accelerate's prepared
          optimizer, a ``LightningModule``'s, the HF ``Trainer``'s): it steps on XLA itself.
        - The training loop (the innermost ``for``/``while`` around a ``.backward()``,
          ``torch.autograd.grad/backward``, an optimizer step, or a call of a function of this
          file that steps an optimizer; loops over parameters, gradients or optimizers do not
          count) gets ``torch_xla.sync()``: right after the last optimizer step when that step
          sits directly in the loop body, otherwise (gradient accumulation under an ``if``,
          steps inside ``for opt in optimizers``, hand-written ``p -= lr * p.grad`` updates) at
          the end of the loop body, before a final ``continue``/``break``. Several optimizers
          stepped per iteration (a GAN's D then G) get one boundary, after the last.
        - No sync is added when the loop iterates a ``pl.MpDeviceLoader`` (directly, through
          ``enumerate``/``tqdm``/``islice``, or through a name, ``self`` attribute or parameter
          only ever given one), which syncs on every ``next()``, nor when the loop body already
          has ``torch_xla.sync()``, ``xm.mark_step()``, ``xm.optimizer_step(..., barrier=True)``,
          ``with xp.StepTrace(...)`` or a call of a function of this file that syncs.

        A function that steps an optimizer outside any loop (``train_step(batch)``) is followed
        into the loops of this file that call it; the boundary goes after that call. A method
        is followed through ``self.m(...)`` and through ``obj.m(...)`` calls on other objects
        (``layer.train_step(x)``), unless ``obj`` is known to be an instance of another class
        of the file (every assignment of it builds that class). When no
        such call exists and the function is not compiled with ``torch_xla.compile``, the step
        is flagged (TPU221): the caller elsewhere must cut the graph. A ``continue`` before the
        boundary skips it for that iteration: the graph then grows into the next iteration and
        is cut there, which costs one bigger graph, not a leak.

    Why
        torch_xla records operations lazily; without a cut every iteration extends one graph that
        is recompiled each step until memory runs out (measured: 23 compiles in 22 steps).
        ``xm.optimizer_step`` all-reduces gradients across replicas before stepping (a no-op on
        one device) but does not sync by default, hence the separate ``torch_xla.sync()``. One
        graph per micro-step under gradient accumulation is what torch_xla recommends.
        ``optimizer_step`` evaluates a closure after reducing gradients, so LBFGS-style closures
        only reduce correctly on a single replica: review those.

    Example
        Before::

            for data, target in train_loader:
                optimizer.zero_grad()
                loss = F.nll_loss(model(data), target)
                loss.backward()
                optimizer.step()
                scheduler.step()

        After::

            for data, target in train_loader:
                optimizer.zero_grad()
                loss = F.nll_loss(model(data), target)
                loss.backward()
                xm.optimizer_step(optimizer)
                torch_xla.sync()
                scheduler.step()
    """

    CODE = "TPU102"
    NAME = "step-boundary"
    SUMMARY = "Use xm.optimizer_step and end every training-loop iteration with torch_xla.sync()"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("step", "backward", "autograd")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return may_contain_training_step(facts)

    FINDINGS = {
        FINDING: FindingDoc(
            "No step boundary could be placed automatically: cut the graph with "
            "torch_xla.sync() once per training step",
            why="XLA records operations lazily and runs them at a step boundary. Without "
            "one, each step's operations are appended to the previous ones: every step "
            "compiles a new, larger graph (measured: 23 compiles in 22 steps) and memory grows "
            "until the run fails.",
            what_to_do="End every training step with torch_xla.sync() after optimizer.step() "
            "(or iterate a pl.MpDeviceLoader, which syncs on each batch); with gradient "
            "accumulation, sync every micro-step. A one-line loop body has to be split into "
            "lines first.",
        ),
    }

    VALID = [
        Valid(
            "import torch\n"
            "from accelerate import Accelerator\n"
            "from torch.utils.data import DataLoader\n"
            "\n"
            "accelerator = Accelerator()\n"
            "train_loader = DataLoader(train_set, batch_size=32, shuffle=True)\n"
            "model, optimizer, train_loader = accelerator.prepare(\n"
            "    model, optimizer, train_loader\n"
            ")\n"
            "for x, y in train_loader:\n"
            "    loss = torch.nn.functional.cross_entropy(model(x), y)\n"
            "    accelerator.backward(loss)\n"
            "    optimizer.step()\n"
            "    optimizer.zero_grad()\n",
            why="Accelerate's prepared optimizer steps on XLA itself; its loader cuts the graph",
        ),
        Valid(
            "import lightning as L\n"
            "import torch\n"
            "\n"
            "\n"
            "class Manual(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        opt = self.optimizers()\n"
            "        for x, y in batch:\n"
            "            loss = torch.nn.functional.mse_loss(self.net(x), y)\n"
            "            self.manual_backward(loss)\n"
            "            opt.step()\n"
            "            opt.zero_grad()\n",
            why="a LightningModule's step: Lightning's XLA strategy steps and cuts the graph",
        ),
        Valid(
            "import gym\n\n"
            "env = gym.make('CartPole-v1')\n"
            "obs = env.reset()\n"
            "for t in range(1000):\n"
            "    action = policy(obs)\n"
            "    obs, reward, done, info = env.step(action)\n"
            "    if done:\n"
            "        obs = env.reset()\n",
            why="an RL rollout: env.step is no optimizer and there is no backward",
        ),
        Valid(
            "import torch\n\n\n"
            "def evaluate(model, loader, device):\n"
            "    model.eval()\n"
            "    correct = 0\n"
            "    with torch.no_grad():\n"
            "        for x, y in loader:\n"
            "            correct += (model(x.to(device)).argmax(1) == y.to(device)).sum()\n"
            "    return correct\n",
            why="an evaluation loop has no backward and no step: no boundary needed here",
        ),
        Valid(
            "import torch\n"
            "import torch_xla\n"
            "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "model = DDP(model, gradient_as_bucket_view=True)\n"
            "for x, y in loader:\n"
            "    loss = model(x).sum()\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
            "    torch_xla.sync()\n",
            why="DDP keeps optimizer.step(); the boundary is there",
        ),
    ]

    INVALID = [
        Invalid(
            "import torch\n"
            "from torch import optim\n\n"
            "sgd = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)\n"
            "for epoch in range(5):\n"
            "    for x, y in loader:\n"
            "        sgd.zero_grad()\n"
            "        criterion(model(x), y).backward()\n"
            "        sgd.step()\n"
            "    print(epoch)\n",
            "import torch\n"
            "from torch import optim\n"
            "import torch_xla\n"
            "import torch_xla.core.xla_model as xm\n\n"
            "sgd = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)\n"
            "for epoch in range(5):\n"
            "    for x, y in loader:\n"
            "        sgd.zero_grad()\n"
            "        criterion(model(x), y).backward()\n"
            "        xm.optimizer_step(sgd)\n"
            "        torch_xla.sync()\n"
            "    print(epoch)\n",
            why="module-level script; an optimizer found by its torch.optim constructor",
        ),
        Invalid(
            "import torch\n\n\n"
            "def train(model, loader, optimizer, accum_steps):\n"
            "    for i, (x, y) in enumerate(loader):\n"
            "        loss = model(x, y) / accum_steps\n"
            "        loss.backward()\n"
            "        if (i + 1) % accum_steps == 0:\n"
            "            optimizer.step()\n"
            "            optimizer.zero_grad()\n",
            "import torch\n"
            "import torch_xla\n"
            "import torch_xla.core.xla_model as xm\n\n\n"
            "def train(model, loader, optimizer, accum_steps):\n"
            "    for i, (x, y) in enumerate(loader):\n"
            "        loss = model(x, y) / accum_steps\n"
            "        loss.backward()\n"
            "        if (i + 1) % accum_steps == 0:\n"
            "            xm.optimizer_step(optimizer)\n"
            "            optimizer.zero_grad()\n"
            "        torch_xla.sync()\n",
            why="gradient accumulation: one graph per micro-step, cut at the end of the body",
        ),
        Invalid(
            "import torch\n\n"
            "for t in range(500):\n"
            "    y_pred = model(x)\n"
            "    loss = loss_fn(y_pred, y)\n"
            "    model.zero_grad()\n"
            "    loss.backward()\n"
            "    with torch.no_grad():\n"
            "        for param in model.parameters():\n"
            "            param -= learning_rate * param.grad\n",
            "import torch\n"
            "import torch_xla\n\n"
            "for t in range(500):\n"
            "    y_pred = model(x)\n"
            "    loss = loss_fn(y_pred, y)\n"
            "    model.zero_grad()\n"
            "    loss.backward()\n"
            "    with torch.no_grad():\n"
            "        for param in model.parameters():\n"
            "            param -= learning_rate * param.grad\n"
            "    torch_xla.sync()\n",
            why="hand-written SGD: the parameter loop is part of the step, the boundary ends "
            "the outer iteration",
        ),
        Invalid(
            "import torch\n\n"
            "w = torch.randn(3, requires_grad=True)\n"
            "step = 0\n"
            "while step < 100:\n"
            "    loss = ((x @ w - y) ** 2).mean()\n"
            "    (g,) = torch.autograd.grad(loss, [w])\n"
            "    with torch.no_grad():\n"
            "        w.sub_(0.1 * g)\n"
            "    step += 1\n",
            "import torch\n"
            "import torch_xla\n\n"
            "w = torch.randn(3, requires_grad=True)\n"
            "step = 0\n"
            "while step < 100:\n"
            "    loss = ((x @ w - y) ** 2).mean()\n"
            "    (g,) = torch.autograd.grad(loss, [w])\n"
            "    with torch.no_grad():\n"
            "        w.sub_(0.1 * g)\n"
            "    step += 1\n"
            "    torch_xla.sync()\n",
            why="a while loop with torch.autograd.grad and a manual update",
        ),
        Invalid(
            "import torch\n"
            "import torch_xla.core.xla_model as xm\n\n"
            "for x, y in loader:\n"
            "    loss = model(x, y)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
            "    xm.mark_step()\n",
            "import torch\n"
            "import torch_xla.core.xla_model as xm\n\n"
            "for x, y in loader:\n"
            "    loss = model(x, y)\n"
            "    loss.backward()\n"
            "    xm.optimizer_step(optimizer)\n"
            "    xm.mark_step()\n",
            why="a loop that already cuts the graph gets no second boundary",
        ),
        Invalid(
            "import torch\n\n\n"
            "def train_step(model, batch, optimizer):\n"
            "    loss = model(batch)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
            "    return loss\n",
            "import torch\n"
            "import torch_xla.core.xla_model as xm\n\n\n"
            "def train_step(model, batch, optimizer):\n"
            "    loss = model(batch)\n"
            "    loss.backward()\n"
            "    # TODO(tpu-migrate): TPU221 optimizer step outside any loop of this file: the "
            "caller's training loop must end each step with torch_xla.sync() (or iterate a "
            "pl.MpDeviceLoader)\n"
            "    xm.optimizer_step(optimizer)\n"
            "    return loss\n",
            findings=[FINDING],
            why="a step function whose loop lives in another file is flagged",
        ),
        Invalid(
            "import torch\n\n\n"
            "class Worker:\n"
            "    def update(self, batch):\n"
            "        self.model(batch).backward()\n"
            "        self.optimizer.step()\n\n\n"
            "class Team:\n"
            "    def update(self, batch):\n"
            "        for worker in self.workers:\n"
            "            worker.update(batch)\n\n\n"
            "team = Team()\n"
            "for batch in loader:\n"
            "    team.update(batch)\n",
            "import torch\n"
            "import torch_xla\n"
            "import torch_xla.core.xla_model as xm\n\n\n"
            "class Worker:\n"
            "    def update(self, batch):\n"
            "        self.model(batch).backward()\n"
            "        xm.optimizer_step(self.optimizer)\n\n\n"
            "class Team:\n"
            "    def update(self, batch):\n"
            "        for worker in self.workers:\n"
            "            worker.update(batch)\n"
            "            torch_xla.sync()\n\n\n"
            "team = Team()\n"
            "for batch in loader:\n"
            "    team.update(batch)\n",
            why="a method that steps, called on an object (worker.update), is followed into the "
            "caller's loop; team is known to be a Team, whose update does not step itself",
        ),
        Invalid(
            "import torch\n\n"
            "for x, y in loader: opt.zero_grad(); model(x, y).backward(); opt.step()\n",
            "import torch\n"
            "import torch_xla.core.xla_model as xm\n\n"
            "# TODO(tpu-migrate): TPU221 one-line training loop: end its body with "
            "torch_xla.sync()\n"
            "for x, y in loader: opt.zero_grad(); model(x, y).backward(); xm.optimizer_step(opt)\n",
            findings=[FINDING],
            why="a one-line loop body cannot take a statement: flagged",
        ),
        Invalid(
            "import torch\n\n"
            "for epoch in range(3):\n"
            "    for x, y in loader:\n"
            "        if x is None:\n"
            "            continue\n"
            "        model(x, y).backward()\n"
            "        for opt in (opt_enc, opt_dec):\n"
            "            opt.step()\n"
            "        continue\n",
            "import torch\n"
            "import torch_xla\n"
            "import torch_xla.core.xla_model as xm\n\n"
            "for epoch in range(3):\n"
            "    for x, y in loader:\n"
            "        if x is None:\n"
            "            continue\n"
            "        model(x, y).backward()\n"
            "        for opt in (opt_enc, opt_dec):\n"
            "            xm.optimizer_step(opt)\n"
            "        torch_xla.sync()\n"
            "        continue\n",
            why="the end-of-body boundary goes before a final continue",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self.conversions: set[int] = set()  # optimizer ``.step`` calls to rewrite

    # ------------------------------------------------------------------ planning
    def visit_Module(self, node: cst.Module) -> bool:
        self.index = ModuleIndex(self, node)
        index = self.index
        sharded = any(refers_to(self, call.func, SHARDING_WRAPPERS) for call in index.calls)
        frameworks = index.frameworks
        steps = [
            call
            for call in index.calls
            if self._is_optimizer_step(call)
            and not frameworks.manages(call.func.value)  # type: ignore[attr-defined]
            and not frameworks.owns_code(call)
        ]
        if not sharded:
            self.conversions = {id(call) for call in steps}
        xla_steps = [call for call in index.calls if calls(self, call, XLA_OPTIMIZER_STEP)]
        backwards = [call for call in index.calls if self._is_backward(call)]
        compiled = self._compiled_functions()
        self.syncing_calls = self._syncing_calls()
        # (call, does it step an optimizer) for every piece of a training step
        markers: list[tuple[cst.CSTNode, bool]] = [(c, True) for c in steps + xla_steps]
        markers += [(c, False) for c in backwards]
        for function, is_step in self._step_functions(steps + xla_steps, backwards, compiled):
            markers += [(call, is_step) for call in self._calls_reaching(function)]
        loops: dict[int, tuple[cst.CSTNode, list[cst.CSTNode]]] = {}
        for marker, is_step in markers:
            loop = index.training_loop_of(marker)
            if loop is not None:
                entry = loops.setdefault(id(loop), (loop, []))
                if is_step:
                    entry[1].append(marker)
        for loop, loop_steps in loops.values():
            self._plan_boundary(loop, loop_steps)
        for call in steps:
            self._flag_if_unplaced(call, compiled)
        return True

    def _is_optimizer_step(self, call: cst.Call) -> bool:
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "step"):
            return False
        if any(arg.star for arg in call.args) or len(call.args) > 1:
            return False
        if call.args and call.args[0].keyword and call.args[0].keyword.value != "closure":
            return False
        return self._is_optimizer(func.value)

    def _is_optimizer(self, expr: cst.BaseExpression) -> bool:
        values = self.index.binding_values(expr)
        if isinstance(expr, cst.Subscript):
            containers = self.index.binding_values(expr.value) or []
            values = [
                element.value
                for container in containers
                if isinstance(container, (cst.List, cst.Tuple))
                for element in container.elements
            ]
        if values:
            if any(self._constructs_optimizer(value) for value in values):
                return True
            if any(self._constructs_other(value) for value in values):
                return False
        return named_like_optimizer(expr)

    def _constructs_optimizer(self, value: cst.BaseExpression) -> bool:
        if not isinstance(value, cst.Call):
            return False
        return any(
            name.startswith(OPTIMIZER_PACKAGE) and not name.startswith(NOT_OPTIMIZER_PACKAGES)
            for name in self.qualified_names(value.func)
        )

    def _constructs_other(self, value: cst.BaseExpression) -> bool:
        """A scheduler, or an instance of a class of this file that is no optimizer."""
        if not isinstance(value, cst.Call):
            return False
        if any(
            name.startswith(NOT_OPTIMIZER_PACKAGES) for name in self.qualified_names(value.func)
        ):
            return True
        cls = self._local_class(value.func)
        return cls is not None and not any(
            "optim" in name.lower()
            for base in cls.bases
            for name in (code_of(base.value), *self.qualified_names(base.value))
        )

    def _local_class(self, func: cst.BaseExpression) -> cst.ClassDef | None:
        if not isinstance(func, cst.Name):
            return None
        bound = self.bindings_of(func)
        if bound is None:
            return None
        nodes = [getattr(a, "node", None) for a in bound[1]]
        return nodes[0] if len(nodes) == 1 and isinstance(nodes[0], cst.ClassDef) else None

    def _is_backward(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "backward":
            return True
        return refers_to(self, func, AUTOGRAD_FUNCTIONS)

    def _step_functions(self, steps, backwards, compiled):
        """Functions of this file that step an optimizer (True) or only run a backward (False)
        outside any loop of their own: their calls stand for the step in the caller's loop."""
        found: dict[int, tuple[cst.FunctionDef, bool]] = {}
        for call, is_step in [(c, True) for c in steps] + [(c, False) for c in backwards]:
            if self.index.training_loop_of(call) is not None:
                continue
            function = self.index.owner(call)
            if isinstance(function, cst.FunctionDef) and id(function) not in compiled:
                previous = found.get(id(function), (function, False))[1]
                found[id(function)] = (function, previous or is_step)
        return list(found.values())

    def _calls_reaching(self, function: cst.FunctionDef) -> list[cst.Call]:
        """Its calls: ``f(...)``, ``self.f(...)``, and ``obj.f(...)`` for a method."""
        return self.index.calls_of(function) + self.index.calls_through_instances(function)

    def _compiled_functions(self) -> set[int]:
        """Functions passed to (or decorated with) ``torch_xla.compile``: it cuts the graph."""
        names = {
            last_identifier(arg.value)
            for call in self.index.calls
            if refers_to(self, call.func, COMPILERS)
            for arg in positional_arguments(call)[:1]
        }
        compiled = set()
        for function in self.index.functions:
            decorated = any(
                refers_to(self, d.decorator, COMPILERS)
                or (
                    isinstance(d.decorator, cst.Call)
                    and refers_to(self, d.decorator.func, COMPILERS)
                )
                for d in function.decorators
            )
            if decorated or function.name.value in names:
                compiled.add(id(function))
        return compiled

    def _plan_boundary(self, loop, steps: list[cst.CSTNode]) -> None:
        if self.index.is_device_loop(loop) or self._cuts_graph(loop):
            return
        if self.index.frameworks.owns_code(loop.body):
            return  # a framework's loop: it cuts the graph itself
        sync = new_statement("torch_xla.sync()")
        if steps:
            last = self.index.statement_of(max(steps, key=self.position))
            if last is not None and self.index.parent(last) is loop.body:
                self.edits.insert_after(last, sync)
                self._record_sync()
                return
        if not isinstance(loop.body, cst.IndentedBlock):
            self.flag(loop, FINDING, "one-line training loop: end its body with torch_xla.sync()")
            return
        self.edits.append_to(loop.body, sync)
        self._record_sync()

    def _record_sync(self) -> None:
        self.require_import(TORCH_XLA)
        self.record_rewrite()

    def _cuts_graph(self, loop) -> bool:
        """The loop body already syncs: directly, by a barrier, a step context, or by calling a
        function of this file that syncs."""
        for node in walk_code(loop.body):
            if isinstance(node, cst.Call) and (self._syncs(node) or id(node) in self.syncing_calls):
                return True
            if isinstance(node, cst.WithItem) and calls(self, node.item, STEP_CONTEXTS):
                return True
        return False

    def _syncing_calls(self) -> set[int]:
        """Calls of the functions of this file that sync themselves."""
        return {
            id(call)
            for function in self.index.functions
            if any(self._syncs(c) for c in calls_in(function.body))
            for call in self.index.calls_of(function)
        }

    def _syncs(self, call: cst.Call) -> bool:
        if calls(self, call, SYNCS, SYNC_SPELLINGS):
            return True
        return calls(self, call, XLA_OPTIMIZER_STEP) and any(
            arg.keyword is not None
            and arg.keyword.value == "barrier"
            and code_of(arg.value) == "True"
            for arg in call.args
        )

    def _flag_if_unplaced(self, call: cst.Call, compiled: set[int]) -> None:
        """An optimizer step in a function no loop of this file reaches: say who must cut."""
        if self.index.training_loop_of(call) is not None:
            return
        function = self.index.owner(call)
        if not isinstance(function, cst.FunctionDef) or id(function) in compiled:
            return
        if any(self._syncs(c) for c in calls_in(function.body)):
            return
        if any(self.index.loops_around(c) for c in self._calls_reaching(function)):
            return
        self.flag(
            call,
            FINDING,
            "optimizer step outside any loop of this file: the caller's training loop must end "
            "each step with torch_xla.sync() (or iterate a pl.MpDeviceLoader)",
        )

    # ------------------------------------------------------------------ rewriting
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if id(original_node) not in self.conversions:
            return updated_node
        optimizer = updated_node.func.value  # type: ignore[attr-defined]
        args = [cst.Arg(optimizer)]
        if updated_node.args:
            closure = cst.Dict(
                [cst.DictElement(cst.SimpleString('"closure"'), updated_node.args[0].value)]
            )
            args.append(
                cst.Arg(
                    closure,
                    keyword=cst.Name("optimizer_args"),
                    equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""),
                        whitespace_after=cst.SimpleWhitespace(""),
                    ),
                )
            )
        self.require_import(XM)
        self.record_rewrite()
        return cst.Call(func=cst.parse_expression("xm.optimizer_step"), args=args)
