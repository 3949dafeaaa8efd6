"""Removing, replacing and inserting the statements of a block, with one policy for the comment and
blank lines around them (TPU101 and its parts, TPU102, TPU103, TPU104).

A rule lists ``AppliesStatementEdits`` before ``TpuCodemod`` in its bases and records its edits in
``self.edits`` while libcst walks the tree, keyed by the identity of *original* statements (the
``original_node`` of ``leave_*``); each block gets its edits when the rule leaves it::

    self.edits.remove(original_node)  # a whole statement (line or compound)
    self.edits.replace(original_node, Replacement(statements, leading, trailing))
    self.edits.insert_before(original_node, new)  # also insert_after, append_to(block, new)
    return self.edits.remove_small_statements(original_node, updated_node, removed_ids)  # a; b

Where the lines of a removed statement S go (N: the statement now following it):

- S's own comments, the comment lines right above it with no blank line between, stay above N only
  when N follows S directly (no blank line between them) and is not a ``return``, ``raise``,
  ``break`` or ``continue``: they probably describe a group that continues with N. Otherwise they
  described S alone and go with it, like its trailing ``# comment``.
- The lines above S's own comments move onto N. When S was the last statement of its block,
  their comments go to the end of the block (blank lines alone are dropped), above the ``pass``
  of a block left empty.
- Blank lines never pile up: joined lines keep no longer a run of blank lines than either side had.
- A block's new first statement starts right below the block header (or the file's header).
- Removing several statements gives the result of removing them one after another, top down.

An ``if`` whose body the pass emptied (the ``pass`` this module puts in a block left empty, never
one the user wrote) goes too when that cannot change what runs: its test has no side effects
(names, attributes, constants, comparisons, arithmetic and boolean operations, ``PURE_CALLS``)
and it has no ``elif``/``else`` that still does something. An emptied ``else`` goes whatever the
test, and so does an emptied last ``elif`` with such a test; an emptied branch before a live one
stays (it decides which branch runs). The ``if`` goes as a removed statement, by the rules above;
the comments left in a dropped body or branch move on as the lines above S's own comments do.

A ``# TODO(tpu-migrate)`` marker above a removed statement never goes with it: it reports
something about the code around it (an earlier rule put it on the statement following one it
removed), so it moves on like the lines above S's own comments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Container, Sequence, Union

import libcst as cst

from ._base import MARKER_PREFIX

# Calls known to only answer a question: an ``if`` testing them can go with its emptied body.
PURE_CALLS = frozenset(
    {
        "torch.accelerator.is_available",
        "torch.backends.cudnn.is_available",
        "torch.backends.mps.is_available",
        "torch.cuda.device_count",
        "torch.cuda.is_available",
        "torch.cuda.is_bf16_supported",
        "torch.distributed.is_available",
        "torch.distributed.is_initialized",
    }
)
# Expressions with no side effects of their own when their parts have none.
PURE_EXPRESSIONS = (
    cst.Name,
    cst.Attribute,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.Comparison,
    cst.BooleanOperation,
    cst.UnaryOperation,
    cst.BinaryOperation,
)

Block = Union[cst.IndentedBlock, cst.Module]
Lines = Sequence[cst.EmptyLine]
SmallLine = Union[cst.SimpleStatementLine, cst.SimpleStatementSuite]
JUMPS = (cst.Continue, cst.Break)
EXITS = (*JUMPS, cst.Return, cst.Raise)


@dataclass(frozen=True)
class Replacement:
    """Statements that take the place of one statement: ``leading`` goes above them, ``trailing``
    below them; ``ends_block``: the rest of the block can no longer run and is dropped."""

    statements: tuple[cst.BaseStatement, ...]
    leading: tuple[cst.EmptyLine, ...] = ()
    trailing: tuple[cst.EmptyLine, ...] = ()
    ends_block: bool = False


@dataclass(frozen=True)
class Piece:
    """One step of rebuilding a block: a statement that stays (``removed`` False), one that goes,
    or (``statement`` None) comment lines that move onto whatever statement comes next."""

    statement: cst.BaseStatement | None
    removed: bool = False
    lines: tuple[cst.EmptyLine, ...] = ()  # only for statement None


@dataclass
class StatementEdits:
    """Statement edits of a rule's pass, applied block by block when the rule leaves a block."""

    removed: set[int] = field(default_factory=set)
    replaced: dict[int, Replacement] = field(default_factory=dict)
    before: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)
    after: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)
    at_end: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)  # id(block)
    # Edits of a statement (or at the end of a block) for which this says True are not made:
    # the statement carries a ``# tpu-migrate: ignore[...]`` naming the rule.
    refuses: Callable[[cst.CSTNode], bool] = lambda target: False
    # Whether a call is one of ``PURE_CALLS`` (the rule knows what names refer to).
    pure_call: Callable[[cst.Call], bool] = lambda call: False
    # The ``pass`` lines (and one-line suites) this pass put in blocks it emptied, by id; kept
    # here so that their ids stay theirs.
    emptied: dict[int, cst.CSTNode] = field(default_factory=dict)

    def remove(self, statement: cst.CSTNode) -> None:
        if not self.refuses(statement):
            self.removed.add(id(statement))

    def replace(self, statement: cst.CSTNode, replacement: Replacement) -> None:
        if not self.refuses(statement):
            self.replaced[id(statement)] = replacement

    def insert_before(self, statement: cst.CSTNode, new: cst.BaseStatement) -> None:
        if not self.refuses(statement):
            self.before.setdefault(id(statement), []).append(new)

    def insert_after(self, statement: cst.CSTNode, new: cst.BaseStatement) -> None:
        if not self.refuses(statement):
            self.after.setdefault(id(statement), []).append(new)

    def append_to(self, block: cst.CSTNode, new: cst.BaseStatement) -> None:
        """Add ``new`` at the end of ``block``, before a final ``continue`` / ``break``."""
        if not self.refuses(block):
            self.at_end.setdefault(id(block), []).append(new)

    def is_removed(self, statement: cst.CSTNode) -> bool:
        return id(statement) in self.removed

    def remove_small_statements(
        self, original: SmallLine, updated: SmallLine, removed: Container[int]
    ) -> SmallLine:
        """``updated`` without the small statements whose original's id is in ``removed``
        (``a; b; c`` -> ``a; c``). A line left empty is removed from its block; a one-line suite
        left empty (``if x: a``) becomes ``pass``."""
        kept = [new for old, new in zip(original.body, updated.body) if id(old) not in removed]
        if len(kept) == len(updated.body):
            return updated
        if kept:
            kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(body=kept)
        if isinstance(updated, cst.SimpleStatementSuite):
            suite = updated.with_changes(body=[cst.Pass()])
            self.emptied[id(suite)] = suite
            return suite
        self.remove(original)
        return updated

    def apply(self, original: Block, updated: Block) -> Block:
        """``updated`` with the edits of ``original``'s statements applied."""
        if not self._touches(original) and not self._holds_emptied_if(updated):
            return updated
        pieces = self._pieces(original, updated)
        rebuilt = rebuild_block(updated, pieces)
        if isinstance(rebuilt, cst.IndentedBlock) and not any(
            piece.statement is not None and not piece.removed for piece in pieces
        ):
            self.emptied[id(rebuilt.body[0])] = rebuilt.body[0]  # the ``pass`` of rebuild_block
        return rebuilt

    def _touches(self, original: Block) -> bool:
        ids = {id(statement) for statement in original.body}
        return id(original) in self.at_end or any(
            not ids.isdisjoint(edits)
            for edits in (self.removed, self.replaced, self.before, self.after)
        )

    def _pieces(self, original: Block, updated: Block) -> list[Piece]:
        pieces: list[Piece] = []
        for old, new in zip(original.body, updated.body):
            pieces += [Piece(statement) for statement in self.before.get(id(old), ())]
            replacement = self.replaced.get(id(old))
            if replacement is not None:
                pieces += _replacement_pieces(replacement)
                if replacement.ends_block:
                    return pieces
            elif isinstance(new, cst.If) and id(old) not in self.removed:
                pieces += self._if_pieces(new, old)
            else:
                pieces.append(Piece(new, removed=id(old) in self.removed))
            pieces += [Piece(statement) for statement in self.after.get(id(old), ())]
        appended = [Piece(statement) for statement in self.at_end.get(id(original), ())]
        kept = [i for i, p in enumerate(pieces) if p.statement is not None and not p.removed]
        at = kept[-1] if kept and _is_jump(pieces[kept[-1]].statement) else len(pieces)
        return [*pieces[:at], *appended, *pieces[at:]]

    def _holds_emptied_if(self, block: Block) -> bool:
        return bool(self.emptied) and any(
            isinstance(statement, cst.If) and self._has_emptied_branch(statement)
            for statement in block.body
        )

    def _has_emptied_branch(self, statement: cst.If) -> bool:
        branch: cst.If | cst.Else | None = statement
        while branch is not None:
            if self._is_emptied(branch.body):
                return True
            branch = branch.orelse if isinstance(branch, cst.If) else None
        return False

    def _is_emptied(self, body: cst.BaseSuite) -> bool:
        """``body`` is only the ``pass`` this pass put there."""
        if isinstance(body, cst.SimpleStatementSuite):
            return self.emptied.get(id(body)) is body
        return len(body.body) == 1 and self.emptied.get(id(body.body[0])) is body.body[0]

    def _if_pieces(self, statement: cst.If, original: cst.If) -> list[Piece]:
        """``statement`` without its emptied branches that can go, and the comments they held."""
        pruned, comments = self._pruned(statement, original)
        after = [Piece(None, lines=tuple(comments))] if comments else []
        if pruned is None:
            return [Piece(statement, removed=True), *after]
        return [Piece(pruned), *after]

    def _pruned(
        self, branch: cst.If, original: cst.CSTNode | None
    ) -> tuple[cst.If | None, list[cst.EmptyLine]]:
        """``branch`` (an ``if`` or ``elif``) without its trailing branches that the pass
        emptied and that need not run (None: all of it can go), and the comments of what goes.
        The lines above an ``if`` that goes are not among them: they go with it as a statement's."""
        orelse = branch.orelse
        comments: list[cst.EmptyLine] = []
        if isinstance(orelse, cst.If):
            kept, comments = self._pruned(orelse, getattr(original, "orelse", None))
            if kept is None:
                comments = merge_lines(_comments(orelse.leading_lines), comments)
        elif isinstance(orelse, cst.Else) and self._is_emptied(orelse.body):
            kept = None
            comments = merge_lines(_comments(orelse.leading_lines), _body_comments(orelse.body))
        else:
            kept = orelse
        if kept is None and self._is_emptied(branch.body) and self._is_pure_test(original):
            return None, merge_lines(_body_comments(branch.body), comments)
        if kept is orelse:
            return branch, comments
        return branch.with_changes(orelse=kept), comments

    def _is_pure_test(self, original: cst.CSTNode | None) -> bool:
        """The test of ``original`` (the branch as the tree the rule's metadata describes has
        it: what a call refers to is known there only) has no side effects."""
        return isinstance(original, cst.If) and self._is_pure(original.test)

    def _is_pure(self, node: cst.BaseExpression) -> bool:
        """``node`` has no side effects: made only of ``PURE_EXPRESSIONS`` and ``PURE_CALLS``."""
        if isinstance(node, cst.Call):
            return self.pure_call(node) and all(self._is_pure(arg.value) for arg in node.args)
        if not isinstance(node, PURE_EXPRESSIONS):
            return False
        return all(self._is_pure(part) for part in _operands(node))


def _operands(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The expressions ``node`` (one of ``PURE_EXPRESSIONS``) evaluates to compute its value."""
    if isinstance(node, cst.Attribute):
        return [node.value]
    if isinstance(node, cst.Comparison):
        return [node.left, *(target.comparator for target in node.comparisons)]
    if isinstance(node, (cst.BooleanOperation, cst.BinaryOperation, cst.ConcatenatedString)):
        return [node.left, node.right]
    if isinstance(node, cst.UnaryOperation):
        return [node.expression]
    return []


def _comments(lines: Lines) -> list[cst.EmptyLine]:
    """``lines`` from their first comment to their last (blank lines alone are nothing)."""
    return _without_trailing_blanks(_without_leading_blanks(lines))


def _body_comments(body: cst.BaseSuite) -> list[cst.EmptyLine]:
    """The comment lines of a block the pass emptied: above its ``pass`` and below it."""
    if isinstance(body, cst.SimpleStatementSuite):
        return []
    return _comments(merge_lines(body.body[0].leading_lines, body.footer))


class AppliesStatementEdits:
    """Mixin for a rule (listed before ``TpuCodemod`` in its bases): ``self.edits`` records
    statement edits while the rule visits; each block gets them when the rule leaves it."""

    def __init__(self, context) -> None:
        super().__init__(context)  # type: ignore[call-arg]
        # TpuCodemod.refuses_statement_edit: no edit where a suppression names the rule
        self.edits = StatementEdits(  # type: ignore
            refuses=self.refuses_statement_edit,  # type: ignore
            pure_call=lambda call: self.is_name(call.func, *PURE_CALLS),  # type: ignore
        )

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return self.edits.apply(original_node, updated_node)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return self.edits.apply(original_node, updated_node)


def _replacement_pieces(replacement: Replacement) -> list[Piece]:
    first, *rest = replacement.statements
    first = first.with_changes(leading_lines=merge_lines(replacement.leading, first.leading_lines))
    pieces = [Piece(first), *(Piece(statement) for statement in rest)]
    if replacement.trailing:
        pieces.append(Piece(None, lines=replacement.trailing))
    return pieces


def rebuild_block(block: Block, pieces: Sequence[Piece]) -> Block:
    """``block`` holding the statements of ``pieces`` that stay, the lines of those that go placed
    by the policy of this module."""
    body: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []  # lines of removed statements, waiting for the next one
    loose: list[cst.EmptyLine] = []  # lines that go above the next statement whatever it is
    for piece in pieces:
        if piece.statement is None:
            loose = merge_lines(loose, piece.lines)
            continue
        own = merge_lines(loose, piece.statement.leading_lines)
        loose = []
        lines = merge_lines(_kept_above(carried, piece.statement, own), own) if carried else own
        if piece.removed:
            carried = lines
            continue
        carried = []
        statement = piece.statement
        if list(lines) != list(statement.leading_lines):
            statement = statement.with_changes(leading_lines=lines)
        body.append(statement)
    left = merge_lines(_kept_at_end(carried), loose)
    footer = list(block.footer)
    if not body and isinstance(block, cst.IndentedBlock):
        body = [cst.SimpleStatementLine([cst.Pass()], leading_lines=left)]
    elif left:
        footer = merge_lines(left, footer)
    if body and (not block.body or body[0] is not block.body[0]):
        body[0] = body[0].with_changes(leading_lines=_without_leading_blanks(body[0].leading_lines))
    return block.with_changes(body=body, footer=footer)


def _kept_above(
    carried: Lines, following: cst.BaseStatement, following_own: Lines
) -> list[cst.EmptyLine]:
    """What stays of a removed statement's lines ``carried`` above the statement ``following``
    it, whose own lines are ``following_own``. A ``return`` (``raise``, ``break``, ``continue``)
    closes the block rather than continuing a group, like the end of the block."""
    above, own_comments = _split_own_comments(carried)
    follows_directly = not following_own or not _is_blank(following_own[0])
    if follows_directly and not _leaves_block(following):
        return [*above, *own_comments]
    return [*above, *_markers(own_comments)]


def _kept_at_end(carried: Lines) -> list[cst.EmptyLine]:
    """What stays of the lines of a removed statement that ended its block: the comments above
    its own ones (with the blank lines between them) and the markers among its own ones, never
    blank lines alone."""
    above, own_comments = _split_own_comments(carried)
    kept = [*above, *_markers(own_comments)]
    if not any(line.comment for line in kept):
        return []
    return _without_trailing_blanks(kept)


def _markers(lines: Lines) -> list[cst.EmptyLine]:
    """The ``# TODO(tpu-migrate)`` markers among ``lines``: they never go with a statement."""
    return [line for line in lines if line.comment and line.comment.value.startswith(MARKER_PREFIX)]


def _split_own_comments(lines: Lines) -> tuple[list[cst.EmptyLine], list[cst.EmptyLine]]:
    """``lines`` above a statement split before the comment lines directly above it."""
    start = len(lines)
    while start and not _is_blank(lines[start - 1]):
        start -= 1
    return list(lines[:start]), list(lines[start:])


def merge_lines(first: Lines, second: Lines) -> list[cst.EmptyLine]:
    """``first`` then ``second``, with no longer a run of blank lines than either had alone."""
    if not first or not second:
        return [*first, *second]
    limit = max(_longest_blank_run(first), _longest_blank_run(second))
    merged: list[cst.EmptyLine] = []
    run = 0
    for line in [*first, *second]:
        run = run + 1 if _is_blank(line) else 0
        if run <= limit:
            merged.append(line)
    return merged


def _longest_blank_run(lines: Lines) -> int:
    longest = run = 0
    for line in lines:
        run = run + 1 if _is_blank(line) else 0
        longest = max(longest, run)
    return longest


def _without_leading_blanks(lines: Lines) -> list[cst.EmptyLine]:
    start = 0
    while start < len(lines) and _is_blank(lines[start]):
        start += 1
    return list(lines[start:])


def _without_trailing_blanks(lines: Lines) -> list[cst.EmptyLine]:
    end = len(lines)
    while end and _is_blank(lines[end - 1]):
        end -= 1
    return list(lines[:end])


def _is_blank(line: cst.EmptyLine) -> bool:
    return line.comment is None


def _is_jump(statement: cst.BaseStatement | None) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], JUMPS)
    )


def _leaves_block(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], EXITS)


def after_imports(body: list[cst.BaseStatement]) -> int:
    """The index right after the module's leading docstring and import statements."""
    at = 0
    for index, statement in enumerate(body):
        if isinstance(statement, cst.SimpleStatementLine) and all(
            isinstance(small, (cst.Import, cst.ImportFrom))
            or (isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString))
            for small in statement.body
        ):
            at = index + 1
        else:
            break
    return at
