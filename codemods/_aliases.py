"""Codes of rules that were split in several, kept as aliases for all of their parts.

A rule that did several things became one rule per thing (issue 26, "one idea per rule"). Its
old code stays the code of its main part, and keeps meaning all the parts wherever a user may
have written it: ``--select``/``--ignore``/``--extend-select``, ``select``/``ignore`` and the
``[tool.tpu-migrate.options.CODE]`` tables of the configuration, and suppression comments
(``# tpu-migrate: ignore[TPU103]``). A prefix that covers the old code covers its parts too
(``TPU10`` still names everything TPU103 did), but less specifically than a selector naming a
part by its own code: ``--ignore TPU103 --select TPU122`` runs TPU122 alone.

This module imports nothing of the rules; ``migrate/rule_table.py`` keeps a generated copy of
``ALIASES`` for ``tpu-migrate rules``, which imports no rule.
"""

from __future__ import annotations

from typing import Iterable

# old code (still the code of its main part) -> the codes of the rules split off from it, in
# pipeline order. Data, not code: a split adds a line here.
ALIASES: dict[str, tuple[str, ...]] = {
    # device choices; TPU129 drops fused=True of optimizers, TPU128 collapses branches on
    # availability, TPU127 moves to the device, TPU126 rewrites configured device strings
    "TPU101": ("TPU126", "TPU127", "TPU128", "TPU129"),
    # fp16 autocast -> bf16 autocast on XLA; TPU137 removes the GradScaler and its uses
    "TPU107": ("TPU137",),
    # NCCL/gloo process groups -> the xla backend; TPU131 rank and world size from the runtime,
    # TPU132 DDP's arguments, TPU133 the sampler's replicas, TPU134 torch.cuda.set_device removed,
    # TPU135 nn.DataParallel removed, TPU136 torch_xla.launch
    "TPU108": ("TPU131", "TPU132", "TPU133", "TPU134", "TPU135", "TPU136"),
    # wrap loaders in pl.MpDeviceLoader; TPU122 drops the per-batch copies in their loops,
    # TPU123 pin_memory and non_blocking
    "TPU103": ("TPU122", "TPU123"),
    # xm.save on every rank (rank-0 guards lifted); TPU138 loads onto the CPU
    "TPU109": ("TPU138",),
    # reads moved out of the step (closures, sums on the device, the sync after them); TPU124
    # throttles progress bars, TPU125 reports meter objects keeping device values (TPU243)
    "TPU115": ("TPU124", "TPU125"),
    # findings for what recompiles or syncs in the step; TPU139 re-ties shared weights after the
    # move to the device, or reports the tie it cannot restore (TPU255)
    "TPU117": ("TPU139",),
}


def parts_of(code: str) -> tuple[str, ...]:
    """The rule codes ``code`` stands for: itself, then the parts split off from it."""
    code = code.upper()
    return (code, *ALIASES.get(code, ()))


def split_from(code: str) -> str | None:
    """The old code whose split made the rule ``code``, if it was split off from one."""
    code = code.upper()
    return next((old for old, parts in ALIASES.items() if code in parts), None)


def match(token: str, code: str) -> tuple[int, int] | None:
    """How specifically the selector ``token`` (a code or a prefix, as a user wrote it) names
    ``code``: ``(len(token), 1)`` when ``code`` starts with it, ``(len(token), 0)`` when it
    names an old code (or a prefix of one) that ``code`` was split off from; None when it does
    not name ``code``. Compared as tuples: longer wins, and at equal length the code's own
    spelling wins over an alias."""
    token = token.strip().upper()
    if code.startswith(token):
        return (len(token), 1)
    old = split_from(code)
    if old is not None and old.startswith(token):
        return (len(token), 0)
    return None


def names(token: str, code: str) -> bool:
    """Whether the selector or suppression code ``token`` names ``code`` (alias included)."""
    return match(token, code) is not None


def names_any(token: str, codes: Iterable[str]) -> bool:
    return any(names(token, code) for code in codes)
