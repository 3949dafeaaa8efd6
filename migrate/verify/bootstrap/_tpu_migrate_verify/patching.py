"""Replacing a function where the script and its libraries look it up."""

from __future__ import annotations

import functools
import sys


def replace(module, name: str, replacement) -> None:
    """module.name = replacement, also in every loaded module that did `from module import name`."""
    original = getattr(module, name)
    functools.update_wrapper(replacement, original)
    for loaded in list(sys.modules.values()):
        namespace = getattr(loaded, "__dict__", None)
        if namespace is not None and namespace.get(name) is original:
            namespace[name] = replacement
    setattr(module, name, replacement)
