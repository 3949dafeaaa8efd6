"""What a file's code mentions, read with Python's own parser: enough for a rule to tell, without a
libcst parse, that it cannot act on the file.

Parsing with libcst and resolving its metadata costs tens of times what ``ast.parse`` does, and on
a large tree most files that mention torch are library code no rule acts on. Each rule's
``may_act(facts)`` must answer True for every file it could change or report on (a superset:
the embedded INVALID cases and the fixtures are checked against it); the words in comments and
docstrings that the plain substring ``TRIGGERS`` also match are not in these facts.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


@dataclass
class FileFacts:
    text: str
    tree: ast.Module | None = None
    # identifiers as written: names, attribute names, function/class/parameter/keyword names
    words: set[str] = field(default_factory=set)
    # dotted names as the file's imports resolve them (``cuda.synchronize`` after ``from torch
    # import cuda`` is ``torch.cuda.synchronize``), each with its prefixes; imported modules too
    qualified: set[str] = field(default_factory=set)
    strings: set[str] = field(default_factory=set)  # string constants
    called: set[str] = field(default_factory=set)  # last word of every callee: f(), x.f()
    # ``x[i] = v`` statements (one target), and ``name = value`` values by name
    subscript_writes: list[ast.Assign] = field(default_factory=list)
    values_of: dict[str, list[ast.expr]] = field(default_factory=dict)
    # ``x.NAME = y.OTHER`` statements (one target): (NAME, OTHER)
    attribute_copies: set[tuple[str, str]] = field(default_factory=set)
    # class name -> the qualified names its bases may have (a file may define a name twice)
    class_bases: dict[str, set[str]] = field(default_factory=dict)
    # names and attribute names in what ``for`` statements iterate: ``train_loader`` in
    # ``for i, b in enumerate(self.train_loader):``
    iterated_words: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, text: str) -> "FileFacts":
        """The facts of ``text``; a file Python cannot parse gets facts that rule nothing out."""
        facts = cls(text)
        try:
            facts.tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return facts
        facts._collect(facts.tree)
        return facts

    @property
    def parsed(self) -> bool:
        return self.tree is not None

    # ----------------------------------------------------------------- questions rules ask
    def mentions(self, *words: str) -> bool:
        """One of ``words`` is an identifier in the code (not a comment or a docstring)."""
        return not self.parsed or not self.words.isdisjoint(words)

    def uses(self, *prefixes: str) -> bool:
        """The code refers to a name under one of these dotted ``prefixes`` (``torch.cuda``
        covers ``torch.cuda.synchronize``), however it was imported."""
        if not self.parsed:
            return True
        return any(
            name == prefix or name.startswith(prefix + ".")
            for name in self.qualified
            for prefix in prefixes
        )

    def calls(self, *words: str) -> bool:
        """Something is called whose last word is one of ``words``: ``f()``, ``x.y.f()``."""
        return not self.parsed or not self.called.isdisjoint(words)

    def has_word(self, predicate) -> bool:
        return not self.parsed or any(predicate(word) for word in self.words)

    def has_string(self, predicate) -> bool:
        return not self.parsed or any(predicate(s) for s in self.strings)

    def copies_attribute(self, predicate) -> bool:
        """A statement ``x.a = y.b`` for which ``predicate(a, b)`` holds."""
        return not self.parsed or any(predicate(a, b) for a, b in self.attribute_copies)

    def iterates_word(self, predicate) -> bool:
        """A ``for`` statement iterates an expression holding a word ``predicate`` accepts."""
        return not self.parsed or any(predicate(word) for word in self.iterated_words)

    def defines_subclass_of(self, prefix: str, depth: int = 3) -> bool:
        """A class of this file derives from a name under ``prefix`` (``torch.nn``), directly
        or through up to ``depth`` other classes of this file."""
        if not self.parsed:
            return True
        found = {
            name
            for name, bases in self.class_bases.items()
            if any(base.startswith(prefix + ".") for base in bases)
        }
        for _ in range(depth):
            found |= {name for name, bases in self.class_bases.items() if bases & found}
        return bool(found)

    # ----------------------------------------------------------------- collection
    def _collect(self, tree: ast.Module) -> None:
        aliases: dict[str, set[str]] = {}  # local name -> what it may stand for
        chains: list[list[str]] = []  # Name/Attribute chains, head first
        classes: list[ast.ClassDef] = []
        words, strings, called = self.words, self.strings, self.called
        for node in ast.walk(tree):
            kind = type(node)
            if kind is ast.Name:
                words.add(node.id)
            elif kind is ast.Attribute:
                words.add(node.attr)
                chain = _chain(node)
                if chain is not None:
                    chains.append(chain)
            elif kind is ast.Constant:
                if type(node.value) is str:
                    strings.add(node.value)
            elif kind is ast.Call:
                func = node.func
                if type(func) is ast.Name:
                    called.add(func.id)
                elif type(func) is ast.Attribute:
                    called.add(func.attr)
            elif kind is ast.Assign:
                self._assignment(node)
            elif kind in (ast.AnnAssign, ast.AugAssign, ast.NamedExpr):
                if node.value is not None:
                    self._bind(node.target, node.value)
            elif kind is ast.keyword:
                if node.arg:
                    words.add(node.arg)
            elif kind is ast.arg:
                words.add(node.arg)
            elif kind in (ast.FunctionDef, ast.AsyncFunctionDef):
                words.add(node.name)
            elif kind is ast.For or kind is ast.AsyncFor:
                self._iterated(node.iter)
            elif kind is ast.ClassDef:
                words.add(node.name)
                classes.append(node)
            elif kind is ast.Import:
                for alias in node.names:
                    words.update(alias.name.split("."))
                    self._add_qualified(alias.name)
                    local = alias.asname or alias.name.split(".")[0]
                    target = alias.name if alias.asname else local
                    aliases.setdefault(local, set()).add(target)
                    if alias.asname:
                        words.add(alias.asname)
            elif kind is ast.ImportFrom:
                module = "." * node.level + (node.module or "")
                if node.module:
                    words.update(node.module.split("."))
                    self._add_qualified(module)
                for alias in node.names:
                    words.add(alias.name)
                    full = f"{module}.{alias.name}" if module.strip(".") else module + alias.name
                    self._add_qualified(full)
                    local = alias.asname or alias.name
                    words.add(local)
                    aliases.setdefault(local, set()).add(full)
        for chain in chains:
            for head in aliases.get(chain[0], (chain[0],)):
                self._add_qualified(".".join([head, *chain[1:]]))
        for cls in classes:
            bases = self.class_bases.setdefault(cls.name, set())
            for base in cls.bases:
                chain = [base.id] if type(base) is ast.Name else None
                if type(base) is ast.Attribute:
                    chain = _chain(base)
                if chain is not None:
                    heads = aliases.get(chain[0], (chain[0],))
                    bases.update(".".join([head, *chain[1:]]) for head in heads)

    def _assignment(self, node: ast.Assign) -> None:
        if len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if type(target) is ast.Subscript:
                self.subscript_writes.append(node)
            elif type(target) is ast.Attribute and type(value) is ast.Attribute:
                self.attribute_copies.add((target.attr, value.attr))
        for target in node.targets:
            self._bind(target, node.value)

    def _bind(self, target: ast.expr, value: ast.expr) -> None:
        """Record ``target = value``; each name unpacked from a tuple gets the whole value."""
        kind = type(target)
        if kind is ast.Name:
            self.values_of.setdefault(target.id, []).append(value)
        elif kind in (ast.Tuple, ast.List):
            for element in target.elts:
                self._bind(element, value)
        elif kind is ast.Starred:
            self._bind(target.value, value)

    def _iterated(self, iterable: ast.expr) -> None:
        for node in ast.walk(iterable):
            kind = type(node)
            if kind is ast.Name:
                self.iterated_words.add(node.id)
            elif kind is ast.Attribute:
                self.iterated_words.add(node.attr)

    def _add_qualified(self, dotted: str) -> None:
        parts = dotted.split(".")
        for end in range(1, len(parts) + 1):
            self.qualified.add(".".join(parts[:end]))


def _chain(node: ast.Attribute) -> list[str] | None:
    """``a.b.c`` -> ["a", "b", "c"]; None when the chain does not start at a plain name."""
    parts = [node.attr]
    value = node.value
    while type(value) is ast.Attribute:
        parts.append(value.attr)
        value = value.value
    if type(value) is not ast.Name:
        return None
    parts.append(value.id)
    parts.reverse()
    return parts
