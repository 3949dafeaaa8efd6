"""TPU143: what a LightningModule does that Lightning cannot carry to a TPU by itself (findings)."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import FindingDoc, Invalid, Safety, TpuCodemod, Valid, code_of
from ._frameworks import LIGHTNING, LIGHTNING_PACKAGES
from ._loops import ModuleIndex

SYNCED_LOGGING = "TPU211"
MANUAL_OPTIMIZATION = "TPU212"
CUSTOM_KERNEL = "TPU213"
# The hooks Lightning runs once per batch; logging in training_step is per step by default.
PER_BATCH_HOOKS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})
STEP_BY_DEFAULT = frozenset({"training_step"})
# Libraries of CUDA kernels (and the extension loader), by the first parts of their names.
KERNEL_LIBRARIES = (
    "triton",
    "cupy",
    "apex",
    "flash_attn",
    "xformers",
    "bitsandbytes",
    "mamba_ssm",
    "causal_conv1d",
    "transformer_engine",
    "deepspeed.ops",
    "torch.utils.cpp_extension",
)
EXTENSION_LOADERS = ("torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline")
# ``torch.ops`` namespaces that are torch's own (every other one is an extension's).
TORCH_OP_NAMESPACES = frozenset({"aten", "prims", "xla", "quantized", "profiler", "_c10d_functional"})


class LightningModuleHazards(TpuCodemod):
    """
    What it does
        Reports, in the methods of a ``LightningModule`` (of ``lightning`` or
        ``pytorch_lightning``), what Lightning's TPU path does not take care of:

        - TPU211: ``self.log(..., sync_dist=True)`` or ``prog_bar=True`` on a value logged every
          step (in ``training_step``, unless ``on_step=False``; elsewhere with ``on_step=True``);
        - TPU212: manual optimization (``self.automatic_optimization = False``,
          ``self.manual_backward(...)``), once per module;
        - TPU213: calls into custom CUDA kernels: Triton, CuPy, apex, flash-attn, xFormers,
          bitsandbytes and other kernel libraries, modules built by
          ``torch.utils.cpp_extension.load``, and ``torch.ops`` namespaces of extensions.

        Nothing is rewritten: each needs a decision about the model or the logging.

    Why
        Lightning's XLA strategy reduces a ``sync_dist`` value with ``xm.mesh_reduce``, a
        device-to-host copy and a rendezvous of every process at each call, and the progress
        bar reads its values on the host whenever it refreshes (every step by default): per
        step, both stop the device. With manual optimization the module steps its optimizers
        itself; only a step through ``self.optimizers()`` goes through Lightning's XLA precision
        plugin (``xm.optimizer_step(..., barrier=True)``), which cuts the graph. CUDA kernels
        have no XLA implementation: the module fails on a TPU however the Trainer is set up.

    Example
        Before::

            def training_step(self, batch, batch_idx):
                loss = self.loss(batch)
                self.log("train_loss", loss, prog_bar=True, sync_dist=True)
                return loss

        After::

            def training_step(self, batch, batch_idx):
                loss = self.loss(batch)
                # TODO(tpu-migrate): TPU211 sync_dist=True on a value logged every step: ...
                self.log("train_loss", loss, prog_bar=True, sync_dist=True)
                return loss
    """

    CODE = "TPU143"
    NAME = "lightning-module-hazards"
    SUMMARY = "Report per-step synced logging, manual optimization and CUDA kernels in a LightningModule"
    SAFETY = Safety.MANUAL
    TRIGGERS = ("Lightning",)
    FINDINGS = {
        SYNCED_LOGGING: FindingDoc(
            "a value logged every step is reduced across devices or shown in the progress bar",
            why="Lightning's XLA strategy reduces sync_dist values with xm.mesh_reduce, which "
            "copies the value to the host and waits for every process, and the progress bar "
            "reads its values on the host whenever it refreshes: each step waits for the device.",
            what_to_do="Log per-step values without sync_dist (each process logs its own), and "
            "reduce on epoch-level values only (on_step=False, on_epoch=True); show fewer values "
            "in the bar, or refresh it every N steps (TQDMProgressBar(refresh_rate=N)).",
        ),
        MANUAL_OPTIMIZATION: FindingDoc(
            "manual optimization: check that every step goes through Lightning's optimizers",
            why="Only optimizer.step() on the optimizers self.optimizers() returns runs "
            "Lightning's XLA precision plugin (xm.optimizer_step with a barrier: gradients "
            "reduced, graph cut); a raw torch optimizer step, or gradients accumulated by hand "
            "across steps, builds one ever larger graph.",
            what_to_do="Step and zero the optimizers from self.optimizers(), clip with "
            "self.clip_gradients(...), and keep the per-step host reads out of the step.",
        ),
        CUSTOM_KERNEL: FindingDoc(
            "a custom CUDA kernel in a LightningModule: it has no XLA implementation",
            why="Triton, CuPy, apex, flash-attn, xFormers, bitsandbytes and C++/CUDA extensions "
            "run CUDA code; XLA compiles only torch operations, so the module fails on a TPU.",
            what_to_do="Use the torch operation the kernel speeds up (for attention, "
            "F.scaled_dot_product_attention), or an XLA/Pallas kernel "
            "(torch_xla.experimental.custom_kernel) on the TPU.",
        ),
    }

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*LIGHTNING_PACKAGES)

    def visit_Module(self, node: cst.Module) -> bool:
        if not any(self.imports_module(package) for package in LIGHTNING_PACKAGES):
            return False
        self.index = ModuleIndex(self, node)
        extensions = self._extension_modules()
        manual_reported: set[int] = set()  # id(class): reported once, where it is switched on
        for binding in self.index.all_bindings:
            if code_of(binding.target) == "self.automatic_optimization" and code_of(
                binding.value
            ) == "False":
                cls = self._lightning_class_of(binding.statement)
                if cls is not None and id(cls) not in manual_reported:
                    manual_reported.add(id(cls))
                    self._flag_manual(binding.statement)
        for call in self.index.calls:
            cls = self._lightning_class_of(call)
            if cls is None:
                continue
            method = self._method_of(call)
            if self._is_self_call(call, "log") and method is not None:
                self._check_logging(call, method)
            elif self._is_self_call(call, "manual_backward") and id(cls) not in manual_reported:
                manual_reported.add(id(cls))
                self._flag_manual(call)
            elif self._is_kernel(call.func, extensions):
                self.flag(
                    call,
                    CUSTOM_KERNEL,
                    f"{code_of(call.func)} runs a custom CUDA kernel: it has no XLA "
                    "implementation (use the torch op it replaces)",
                )
        return True  # on into the statements, which take the markers

    def _lightning_class_of(self, node: cst.CSTNode) -> cst.ClassDef | None:
        frameworks = self.index.frameworks
        if frameworks.owns_code(node) != LIGHTNING:
            return None
        return next((a for a in self.index.ancestors(node) if isinstance(a, cst.ClassDef)), None)

    def _method_of(self, node: cst.CSTNode) -> str | None:
        owner = self.index.owner(node)
        return owner.name.value if isinstance(owner, cst.FunctionDef) else None

    @staticmethod
    def _is_self_call(call: cst.Call, method: str) -> bool:
        return code_of(call.func) == f"self.{method}"

    def _check_logging(self, call: cst.Call, method: str) -> None:
        if method not in PER_BATCH_HOOKS:
            return
        keywords = {arg.keyword.value: code_of(arg.value) for arg in call.args if arg.keyword}
        on_step = keywords.get("on_step", "True" if method in STEP_BY_DEFAULT else "False")
        if on_step != "True":
            return
        costly = [name for name in ("sync_dist", "prog_bar") if keywords.get(name) == "True"]
        if costly:
            self.flag(
                call,
                SYNCED_LOGGING,
                f"{' and '.join(f'{name}=True' for name in costly)} on a value logged every "
                "step: a host sync per step on a TPU (log it on_epoch, or without them)",
            )

    def _flag_manual(self, node: cst.CSTNode) -> None:
        self.flag(
            node,
            MANUAL_OPTIMIZATION,
            "manual optimization: step the optimizers of self.optimizers() so that Lightning's "
            "XLA plugin reduces the gradients and cuts the graph",
        )

    def _extension_modules(self) -> set[str]:
        """Names this file binds to a C++/CUDA extension: ``ext = load(name=..., sources=...)``."""
        return {
            code_of(binding.target)
            for binding in self.index.all_bindings
            if isinstance(binding.value, cst.Call)
            and self.is_name(binding.value.func, *EXTENSION_LOADERS)
        }

    def _is_kernel(self, func: cst.BaseExpression, extensions: set[str]) -> bool:
        dotted = code_of(func)
        if any(dotted == name or dotted.startswith(name + ".") for name in extensions):
            return True
        parts = dotted.split(".")
        if parts[:2] == ["torch", "ops"] and len(parts) > 3:
            return parts[2] not in TORCH_OP_NAMESPACES
        return any(
            name == library or name.startswith(library + ".")
            for name in self.qualified_names(func)
            for library in KERNEL_LIBRARIES
        )

    VALID = [
        Valid(
            "import lightning as L\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        loss = self.net(batch).mean()\n"
            '        self.log("train_loss", loss)\n'
            '        self.log("epoch_loss", loss, on_step=False, on_epoch=True, sync_dist=True)\n'
            "        return loss\n\n"
            "    def validation_step(self, batch, batch_idx):\n"
            '        self.log("val_loss", self.net(batch).mean(), prog_bar=True, sync_dist=True)\n',
            why="per-step logging without a sync; synced values reduced once per epoch",
        ),
        Valid(
            "import torch\nimport triton\n\n"
            "class Plain(torch.nn.Module):\n"
            "    def forward(self, x):\n"
            "        return triton_kernel(x)\n",
            why="not a LightningModule",
        ),
    ]
    INVALID = [
        Invalid(
            "import lightning as L\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        loss = self.net(batch).mean()\n"
            '        self.log("train_loss", loss, prog_bar=True, sync_dist=True)\n'
            "        return loss\n",
            "import lightning as L\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        loss = self.net(batch).mean()\n"
            "        # TODO(tpu-migrate): TPU211 sync_dist=True and prog_bar=True on a value logged "
            "every step: a host sync per step on a TPU (log it on_epoch, or without them)\n"
            '        self.log("train_loss", loss, prog_bar=True, sync_dist=True)\n'
            "        return loss\n",
            findings=("TPU211",),
        ),
        Invalid(
            "import pytorch_lightning as pl\n\n"
            "class GAN(pl.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.automatic_optimization = False\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        opt_g, opt_d = self.optimizers()\n"
            "        self.manual_backward(self.g_loss(batch))\n"
            "        opt_g.step()\n",
            "import pytorch_lightning as pl\n\n"
            "class GAN(pl.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        # TODO(tpu-migrate): TPU212 manual optimization: step the optimizers of "
            "self.optimizers() so that Lightning's XLA plugin reduces the gradients and cuts the "
            "graph\n"
            "        self.automatic_optimization = False\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        opt_g, opt_d = self.optimizers()\n"
            "        self.manual_backward(self.g_loss(batch))\n"
            "        opt_g.step()\n",
            findings=("TPU212",),
            why="reported once per module",
        ),
        Invalid(
            "import torch\nfrom flash_attn import flash_attn_func\n"
            "from lightning.pytorch import LightningModule\n"
            "from torch.utils.cpp_extension import load\n\n"
            'fused = load(name="fused", sources=["fused.cu"])\n\n'
            "class Attention(LightningModule):\n"
            "    def forward(self, q, k, v):\n"
            "        out = flash_attn_func(q, k, v, causal=True)\n"
            "        out = torch.ops.my_ext.gelu(out)\n"
            "        return fused.bias_add(out, self.bias)\n",
            "import torch\nfrom flash_attn import flash_attn_func\n"
            "from lightning.pytorch import LightningModule\n"
            "from torch.utils.cpp_extension import load\n\n"
            'fused = load(name="fused", sources=["fused.cu"])\n\n'
            "class Attention(LightningModule):\n"
            "    def forward(self, q, k, v):\n"
            "        # TODO(tpu-migrate): TPU213 flash_attn_func runs a custom CUDA kernel: it has "
            "no XLA implementation (use the torch op it replaces)\n"
            "        out = flash_attn_func(q, k, v, causal=True)\n"
            "        # TODO(tpu-migrate): TPU213 torch.ops.my_ext.gelu runs a custom CUDA kernel: "
            "it has no XLA implementation (use the torch op it replaces)\n"
            "        out = torch.ops.my_ext.gelu(out)\n"
            "        # TODO(tpu-migrate): TPU213 fused.bias_add runs a custom CUDA kernel: it has "
            "no XLA implementation (use the torch op it replaces)\n"
            "        return fused.bias_add(out, self.bias)\n",
            findings=("TPU213", "TPU213", "TPU213"),
        ),
    ]
