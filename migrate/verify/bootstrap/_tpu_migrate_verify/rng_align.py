"""Migrated side: random draws on the XLA device come from the CPU generator, as in the original.

The original runs its CUDA code on the CPU, so its device draws come from the CPU generator; XLA
draws from its own RNG, and the runs would part at the first draw. So every random function of
torch (``torch.rand/randn/randint/randperm/normal/bernoulli/multinomial``, the ``*_like`` ones and
the in-place ``Tensor.normal_/uniform_/bernoulli_/random_/exponential_/...``) is replaced by one that,
for an XLA tensor or device, draws on the CPU with the same arguments and moves the result to the
device (in place: ``copy_`` into the device tensor). The CPU generator is consumed exactly as by
the original's CPU call, so the values are bitwise the same.

Where the CPU kernel reads tensor arguments (``bernoulli(p)``, ``multinomial(probs)``,
``normal(mean, std)``), what it draws from the generator (uniforms, exponentials, standard normals)
is drawn on the CPU the same way and the rest is computed on the device: nothing is read back from
the device, the only cost is a host->device transfer. With --keep-dropout the dropout kernels that
F.dropout & co call (``torch._VF.dropout``, ``feature_dropout``, ``alpha_dropout``...) get their
mask as CPU dropout draws it (``bernoulli_(1 - p)``, ``div_(1 - p)``), multiplied on the device.

Python-level patches rather than a TorchFunctionMode: calls nested in torch's own Python code
(nn.init, torch.distributions, F.gumbel_softmax) are caught too, and other torch calls cost nothing.
Aligned draws are counted in the notes ("rng:randn"), random draws on XLA that are not
("rng-unaligned:poisson").
"""

from __future__ import annotations

import math
from collections import Counter

import torch

from .protocol import Config
from .patching import replace

CPU = torch.device("cpu")
ALIGNED, UNALIGNED = "rng:", "rng-unaligned:"
FACTORIES = ("rand", "randn", "randint", "randperm")
LIKE = ("rand_like", "randn_like", "randint_like")
FILLS = ("normal_", "uniform_", "random_", "exponential_", "geometric_", "cauchy_", "log_normal_")
# Random functions whose draws depend on the values of their inputs, with no CPU equivalent here.
UNALIGNABLE = ("poisson", "binomial", "_standard_gamma", "_sample_dirichlet", "rrelu", "rrelu_")
DROPOUTS = (
    "dropout",
    "dropout_",
    "feature_dropout",
    "feature_dropout_",
    "alpha_dropout",
    "alpha_dropout_",
    "feature_alpha_dropout",
    "feature_alpha_dropout_",
)
ALPHA = 1.7580993408473766  # SELU's alpha, as in ATen's alpha dropout
_SAME_WIDTH_INT = {
    torch.float32: torch.int32,
    torch.float64: torch.int64,
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
}

# The CPU kernels, saved before they are replaced.
_rand = torch.rand
_empty = torch.empty
_normal_ = torch.Tensor.normal_
_bernoulli_ = torch.Tensor.bernoulli_
_exponential_ = torch.Tensor.exponential_


def install(config: Config, notes: Counter) -> None:
    for name in FACTORIES:
        _replace_torch(name, _factory(name, getattr(torch, name), notes))
    _replace_torch("normal", _normal(torch.normal, _factory("normal", torch.normal, notes), notes))
    for name in LIKE:
        _replace_torch(name, _like(name, getattr(torch, name), notes))
    for name, make in (("bernoulli", _bernoulli), ("multinomial", _multinomial)):
        _replace_torch(name, make(getattr(torch, name), notes))
        setattr(torch.Tensor, name, make(getattr(torch.Tensor, name), notes))
    for name in FILLS:
        setattr(torch.Tensor, name, _fill(name, getattr(torch.Tensor, name), notes))
    torch.Tensor.bernoulli_ = _bernoulli_inplace(torch.Tensor.bernoulli_, notes)
    for name in UNALIGNABLE:
        if hasattr(torch, name):
            _replace_torch(name, _counted_unaligned(name, getattr(torch, name), notes))
    if config.keep_dropout:
        for name in DROPOUTS:
            for owner in (torch._VF, torch):  # F.dropout & co call torch._VF.<name>
                original = getattr(owner, name, None)
                if original is not None:
                    setattr(owner, name, _dropout(name, original, notes))
        _count_sdpa_dropout(notes)


def _replace_torch(name: str, aligned) -> None:
    replace(torch, name, aligned)
    if not name.startswith("_"):
        try:  # TorchScript keeps compiling torch.<name> calls to the ATen op
            torch.jit._builtins._register_builtin(aligned, f"aten::{name}")
        except Exception:
            pass


def _xla(device) -> torch.device | None:
    """The device if it names an XLA device."""
    if isinstance(device, torch.device):
        return device if device.type == "xla" else None
    if isinstance(device, str) and (device == "xla" or device.startswith("xla:")):
        return torch.device(device)
    return None


def _on_xla(value) -> bool:
    return isinstance(value, torch.Tensor) and value.is_xla


def _factory_target(kwargs) -> torch.device | None:
    device = kwargs.get("device")
    if device is None and torch._C._len_torch_function_stack():  # torch.set_default_device
        device = torch.get_default_device()
    return _xla(device)


def _alignable(kwargs) -> bool:
    generator = kwargs.get("generator")
    return kwargs.get("out") is None and (generator is None or generator.device.type == "cpu")


def _on_cpu(kwargs) -> dict:
    kwargs = {k: v for k, v in kwargs.items() if k not in ("requires_grad", "pin_memory")}
    kwargs["device"] = CPU
    return kwargs


def _to(value: torch.Tensor, device, requires_grad=False) -> torch.Tensor:
    value = value.to(device)
    return value.requires_grad_() if requires_grad else value


def _cpu_empty(shape, dtype) -> torch.Tensor:
    return _empty(shape, dtype=dtype, device=CPU)


def _factory(name: str, original, notes: Counter):
    def aligned(*args, **kwargs):
        device = _factory_target(kwargs)
        if device is None:
            return original(*args, **kwargs)
        if not _alignable(kwargs):
            notes[UNALIGNED + name] += 1
            return original(*args, **kwargs)
        notes[ALIGNED + name] += 1
        return _to(original(*args, **_on_cpu(kwargs)), device, kwargs.get("requires_grad", False))

    return aligned


def _like(name: str, original, notes: Counter):
    def aligned(input, *args, **kwargs):
        device = kwargs.get("device")
        device = _xla(device) if device is not None else (input.device if _on_xla(input) else None)
        if device is None:
            return original(input, *args, **kwargs)
        if not _alignable(kwargs):
            notes[UNALIGNED + name] += 1
            return original(input, *args, **kwargs)
        notes[ALIGNED + name] += 1
        template = _cpu_empty(input.shape, input.dtype) if _on_xla(input) else input
        drawn = original(template, *args, **_on_cpu(kwargs))
        return _to(drawn, device, kwargs.get("requires_grad", False))

    return aligned


def _fill(name: str, original, notes: Counter):
    """In-place draws that do not read the tensor: draw into a CPU tensor, copy it over."""

    def aligned(self, *args, **kwargs):
        if not self.is_xla:
            return original(self, *args, **kwargs)
        if not _alignable(kwargs):
            notes[UNALIGNED + name] += 1
            return original(self, *args, **kwargs)
        notes[ALIGNED + name] += 1
        return self.copy_(original(_cpu_empty(self.shape, self.dtype), *args, **kwargs))

    return aligned


def _uniform(shape, p_dtype, generator) -> torch.Tensor:
    """The uniforms CPU bernoulli compares p with: float32, or float64 for a float64 p."""
    dtype = torch.float64 if p_dtype == torch.float64 else torch.float32
    return _rand(shape, dtype=dtype, generator=generator, device=CPU)


def _below(uniform: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return uniform.to(p.device) < p.to(uniform.dtype)


def _bernoulli(original, notes: Counter):
    def aligned(input, *args, **kwargs):
        if not _on_xla(input):
            return original(input, *args, **kwargs)
        if not _alignable(kwargs):
            notes[UNALIGNED + "bernoulli"] += 1
            return original(input, *args, **kwargs)
        notes[ALIGNED + "bernoulli"] += 1
        p = args[0] if args else kwargs.get("p")
        generator = kwargs.get("generator")
        if p is None:  # the probabilities are the input's values
            value = _below(_uniform(input.shape, input.dtype, generator), input).to(input.dtype)
        else:  # bernoulli(input, p): only the input's shape and dtype matter
            drawn = original(_cpu_empty(input.shape, input.dtype), p, generator=generator)
            value = drawn.to(input.device)
        return _zero_grad(value, input)

    return aligned


def _bernoulli_inplace(original, notes: Counter):
    def aligned(self, *args, **kwargs):
        if not self.is_xla:
            return original(self, *args, **kwargs)
        if not _alignable(kwargs):
            notes[UNALIGNED + "bernoulli_"] += 1
            return original(self, *args, **kwargs)
        notes[ALIGNED + "bernoulli_"] += 1
        p = args[0] if args else kwargs.get("p", 0.5)
        generator = kwargs.get("generator")
        if isinstance(p, torch.Tensor):  # one uniform per element of self, p broadcast over it
            value = _below(_uniform(self.shape, p.dtype, generator), p).to(self.dtype)
            return self.copy_(_zero_grad(value, p))
        return self.copy_(original(_cpu_empty(self.shape, self.dtype), p, generator=generator))

    return aligned


def _multinomial(original, notes: Counter):
    def aligned(input, *args, **kwargs):
        if not _on_xla(input):
            return original(input, *args, **kwargs)
        if not _alignable(kwargs):
            notes[UNALIGNED + "multinomial"] += 1
            return original(input, *args, **kwargs)
        notes[ALIGNED + "multinomial"] += 1
        num_samples = args[0] if args else kwargs["num_samples"]
        replacement = args[1] if len(args) > 1 else kwargs.get("replacement", False)
        generator = kwargs.get("generator")
        with torch.no_grad():
            if not replacement or num_samples == 1:
                # CPU: argmax / topk of probs / q, q ~ Exp(1) drawn into empty_like(probs)
                q = _exponential_(_cpu_empty(input.shape, input.dtype), 1, generator=generator)
                ratio = input / q.to(input.device)
                if num_samples == 1:
                    return ratio.argmax(-1, keepdim=True)
                return ratio.topk(num_samples).indices
            # CPU: one float64 uniform per sample, looked up in the normalised cumulative sums
            shape = (*input.shape[:-1], num_samples)
            uniform = _rand(shape, dtype=torch.float64, generator=generator, device=CPU)
            acc = torch.float64 if input.dtype == torch.float64 else torch.float32
            cum = input.to(acc).cumsum(-1)
            cum = cum / cum[..., -1:]
            cum = torch.cat([cum[..., :-1], torch.ones_like(cum[..., -1:])], -1)
            below = cum.to(torch.float64).unsqueeze(-2) < uniform.to(input.device).unsqueeze(-1)
            return below.sum(-1)

    return aligned


def _normal(original, factory, notes: Counter):
    def aligned(*args, **kwargs):
        bound = dict(zip(("mean", "std"), args))
        bound.update({k: kwargs[k] for k in ("mean", "std") if k in kwargs})
        mean, std = bound.get("mean"), bound.get("std", 1.0)
        tensors = [t for t in (mean, std) if isinstance(t, torch.Tensor)]
        if not tensors:  # normal(mean, std, size, device=...): a factory
            return factory(*args, **kwargs)
        if not any(_on_xla(t) for t in tensors):
            return original(*args, **kwargs)
        if not _alignable(kwargs):
            notes[UNALIGNED + "normal"] += 1
            return original(*args, **kwargs)
        notes[ALIGNED + "normal"] += 1
        generator = kwargs.get("generator")
        device = next(t.device for t in tensors if _on_xla(t))
        with torch.no_grad():  # CPU: standard normals (times std if std is a number), * std, + mean
            if isinstance(std, torch.Tensor):
                out = mean if isinstance(mean, torch.Tensor) else std
                shape = torch.broadcast_shapes(*(t.shape for t in tensors))
                z = _normal_(_cpu_empty(shape, out.dtype), 0.0, 1.0, generator=generator)
                value = (_Rounded.apply(z.to(device) * std) + mean).to(out.dtype)
            else:
                z = _normal_(_cpu_empty(mean.shape, mean.dtype), 0.0, std, generator=generator)
                value = z.to(device) + mean
        return _zero_grad(value, *tensors)

    return aligned


def _counted_unaligned(name: str, original, notes: Counter):
    def counted(*args, **kwargs):
        if args and _on_xla(args[0]):
            training = args[3] if len(args) > 3 else kwargs.get("training", False)
            if not name.startswith("rrelu") or training:
                notes[UNALIGNED + name] += 1
        return original(*args, **kwargs)

    return counted


def _dropout(name: str, original, notes: Counter):
    """ATen's CPU dropout: noise = bernoulli_(1 - p) into empty_like(input) (N, C, 1... for feature
    dropout), div_(1 - p) (alpha: an affine map), then input * noise."""
    feature, alpha, inplace = name.startswith("feature"), "alpha" in name, name.endswith("_")
    key = ALIGNED + name.rstrip("_")

    def aligned(input, p, train):
        if not (train and 0 < p < 1 and _on_xla(input) and input.numel()):
            return original(input, p, train)
        if feature and input.dim() < 2:
            return original(input, p, train)  # its own error
        notes[key] += 1
        shape = (*input.shape[:2], *[1] * (input.dim() - 2)) if feature else input.shape
        noise = _bernoulli_(_cpu_empty(shape, input.dtype), 1 - p)
        if not alpha:
            noise = noise.div_(1 - p).to(input.device)
            return input.mul_(noise) if inplace else input * noise
        a = 1.0 / math.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
        b = noise.add(-1).mul_(ALPHA * a).add_(ALPHA * a * p).to(input.device)
        noise = noise.mul_(a).to(input.device)
        result = _Rounded.apply(input * noise) + b
        return input.copy_(result) if inplace else result

    return aligned


def _count_sdpa_dropout(notes: Counter) -> None:
    import torch.nn.functional as F

    original = F.scaled_dot_product_attention

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, *args, **kwargs):
        if dropout_p and _on_xla(query):
            notes[UNALIGNED + "scaled_dot_product_attention(dropout_p)"] += 1
        return original(query, key, value, attn_mask, dropout_p, *args, **kwargs)

    replace(F, "scaled_dot_product_attention", sdpa)


def _zero_grad(value: torch.Tensor, *inputs) -> torch.Tensor:
    if torch.is_grad_enabled() and value.is_floating_point():
        tracked = [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]
        if tracked:
            return _ZeroGrad.apply(value, *tracked)
    return value


class _ZeroGrad(torch.autograd.Function):
    """The value, with the zero gradients random ops give the tensors they draw from."""

    @staticmethod
    def forward(ctx, value, *inputs):
        ctx.specs = [(t.shape, t.dtype, t.device) for t in inputs]
        return value.clone()

    @staticmethod
    def backward(ctx, grad):
        return None, *(torch.zeros(s, dtype=d, device=v) for s, d, v in ctx.specs)


class _Rounded(torch.autograd.Function):
    """The identity, kept rounded before the next op: XLA:CPU fuses a multiply and an add into one
    FMA (one rounding), where the CPU kernels round the product first."""

    @staticmethod
    def forward(ctx, x):
        bits = _SAME_WIDTH_INT.get(x.dtype)
        return x.clone() if bits is None else x.view(bits).view(x.dtype).clone()

    @staticmethod
    def backward(ctx, grad):
        return grad
