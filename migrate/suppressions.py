"""``# tpu-migrate: ignore[...]`` comments: finding them in a file, and telling which hid nothing.

The rules honour a suppression themselves (``codemods/_base.py``) and record each one that hid a
rewrite or a finding; what is left over is reported like ruff's RUF100 "unused noqa".
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass
from typing import Collection, Iterable

from codemods._aliases import names_any
from codemods._base import Suppression, parse_suppression

UNUSED_SUPPRESSION = "unused-suppression"  # the id reports use for these (not a rule code)


@dataclass(frozen=True)
class UnusedSuppression:
    line: int
    column: int  # 1-based, where the comment starts
    code: str  # the code as written; "" for a bare ``# tpu-migrate: ignore``
    known: bool = True  # False: no rule or finding has this code or prefix

    @property
    def message(self) -> str:
        if not self.code:
            return "unused suppression `# tpu-migrate: ignore`: nothing on this line to suppress"
        if not self.known:
            return f"unused suppression of {self.code}: no rule or finding has this code"
        return f"unused suppression of {self.code}: it hides nothing here"

    def to_dict(self) -> dict:
        return {
            "line": self.line,
            "column": self.column,
            "code": self.code,
            "message": self.message,
        }


def suppressions_in(text: str) -> list[tuple[Suppression, int]]:
    """Every suppression comment of ``text`` with its 1-based column (none if it does not
    tokenize: then the file did not parse either)."""
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                codes = parse_suppression(token.string)
                if codes is not None:
                    found.append((Suppression(token.start[0], codes), token.start[1] + 1))
    except (tokenize.TokenError, SyntaxError):
        return []
    return found


def unused_suppressions(
    text: str,
    used: Iterable[tuple[int, str]],
    active_codes: Collection[str],
    known_codes: Collection[str],
) -> list[UnusedSuppression]:
    """The suppressions of ``text`` (and the codes in them) that hid nothing in this run.

    ``used``: (line, code as written) of each that did; ``active_codes``: the rule and finding
    codes that ran, so a code left out by ``--select``/``--ignore`` is not called unused.
    """
    used = set(used)
    unused = []
    for suppression, column in suppressions_in(text):
        for token in suppression.codes or ("",):
            if (suppression.line, token) in used:
                continue
            # (the code of a rule that was split names its parts: codemods/_aliases.py)
            known = not token or names_any(token, known_codes)
            ran = not token or names_any(token, active_codes)
            if ran or not known:
                unused.append(UnusedSuppression(suppression.line, column, token, known))
    return unused
