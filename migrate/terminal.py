"""Output to people: colour and a progress bar on a terminal, plain text when piped.

rich does the terminal work (colour detection, NO_COLOR, live progress) so we do not hand-roll it.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

PROGRESS_MIN_FILES = 50  # below this a run is too short for a bar to help

DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))


class Terminal:
    def __init__(self) -> None:
        self._out = Console(file=sys.stdout, highlight=False, soft_wrap=True)
        self._err = Console(file=sys.stderr, highlight=False, soft_wrap=True)

    def out(self, line: str) -> None:
        self._print(self._out, line)

    def error(self, line: str) -> None:
        self._print(self._err, line, "red" if self._err.is_terminal else None)

    def note(self, line: str) -> None:
        self._print(self._err, line, "bold" if self._err.is_terminal else None)

    def diff(self, text: str) -> None:
        if not self._out.is_terminal:
            sys.stdout.write(text)
            sys.stdout.flush()
            return
        for line in text.splitlines():
            style = next((s for prefix, s in DIFF_STYLES if line.startswith(prefix)), None)
            self._out.print(Text(line, style=style or ""))

    @contextmanager
    def progress(self, total: int) -> Iterator[Callable[[], None]]:
        if total < PROGRESS_MIN_FILES or not self._err.is_terminal:
            yield lambda: None
            return
        columns = (
            TextColumn("migrating"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=self._err, transient=True) as bar:
            task = bar.add_task("files", total=total)
            yield lambda: bar.advance(task)

    @staticmethod
    def _print(console: Console, line: str, style: str | None = None) -> None:
        if console.is_terminal:
            console.print(Text(line, style=style or ""))
        else:  # exact bytes when piped: no wrapping, no markup interpretation
            console.file.write(line + "\n")
            console.file.flush()
