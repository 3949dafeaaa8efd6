"""Output to people: colour and a progress bar on a terminal, plain text when piped.

rich does the terminal work (colour detection, NO_COLOR, live progress) so we do not hand-roll it.
It is imported when something is first printed: `check` writes its report itself, and a run of
fewer files than a progress bar needs never asks rich anything.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator

if TYPE_CHECKING:
    from rich.console import Console

PROGRESS_MIN_FILES = 50  # below this a run is too short for a bar to help

DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))


class Terminal:
    def __init__(self) -> None:
        # the streams of the moment, as rich's consoles would have taken them here
        self._out_file, self._err_file = sys.stdout, sys.stderr
        self._consoles: dict[str, Console] = {}

    @property
    def _out(self) -> Console:
        return self._console("out", self._out_file)

    @property
    def _err(self) -> Console:
        return self._console("err", self._err_file)

    def _console(self, name: str, file) -> Console:
        console = self._consoles.get(name)
        if console is None:
            from rich.console import Console

            console = self._consoles[name] = Console(file=file, highlight=False, soft_wrap=True)
        return console

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
        from rich.text import Text

        for line in text.splitlines():
            style = next((s for prefix, s in DIFF_STYLES if line.startswith(prefix)), None)
            self._out.print(Text(line, style=style or ""))

    @contextmanager
    def progress(self, total: int) -> Iterator[Callable[[], None]]:
        if total < PROGRESS_MIN_FILES or not self._err.is_terminal:
            yield lambda: None
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

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
            from rich.text import Text

            console.print(Text(line, style=style or ""))
        else:  # exact bytes when piped: no wrapping, no markup interpretation
            console.file.write(line + "\n")
            console.file.flush()
