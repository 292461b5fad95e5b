"""The clarification interface: where the architect's questions go and answers come from.

The run's clarification loop (seed 004) is a dumb pipe: it `show`s the architect's
message and `ask`s for a free-text answer.  `TerminalAsker` is a person at a terminal
(the message rendered as Markdown, a rich prompt); `FileAsker` reads one answer per line
from a file, for scripts and tests, and remembers how many it used (`consumed`) so a
resumed run starts after them.  Running out of answers is `AnswersExhausted`: one line,
and the run stays resumable.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Protocol, TextIO

from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape
from rich.prompt import Prompt

from orange.errors import InvalidInput


class AnswersExhausted(Exception):
    """No answer to give (the answers file ran out, the terminal's input ended)."""


class Asker(Protocol):
    def show(self, markdown: str) -> None: ...

    def ask(self, question: str) -> str: ...


class TerminalAsker:
    """A person at the terminal; ``run`` names the run in the hint to resume it."""

    def __init__(self, console: Console | None = None, *, run: str = "ID") -> None:
        self.console = console or Console()
        self.run = run

    def show(self, markdown: str) -> None:
        self.console.print(Markdown(markdown))

    def ask(self, question: str) -> str:
        try:
            return Prompt.ask(escape(question), console=self.console)
        except EOFError:
            raise AnswersExhausted(
                f"no answer: the terminal's input ended; run `orange run resume {self.run}` "
                "to answer later"
            ) from None


class FileAsker:
    """One answer per line of ``path``, from line ``start`` (0-based) on; the file is
    read at each question, so answers added while a run waits are seen.  What is shown
    and answered is echoed, as plain text, to ``out`` (stderr by default: stdout may be
    a `--json` document)."""

    def __init__(
        self,
        path: Path,
        start: int = 0,
        *,
        run: str = "ID",
        out: TextIO | None = None,
        stdin: bool = False,
    ) -> None:
        self.path = path
        self.consumed = start  # answers used so far, counting those before `start`
        self.run = run
        self.out = out
        # Standard input that is not a terminal (a pipe, /dev/null): read once, since a
        # pipe cannot be read again, and named as such when it has no answer left.
        self.stdin = stdin
        self._piped: list[str] | None = None

    def _echo(self, text: str) -> None:
        print(text, file=self.out or sys.stderr, flush=True)

    def show(self, markdown: str) -> None:
        self._echo(markdown)

    def lines(self) -> list[str]:
        """The answers, one a line (`InvalidInput` for a file that cannot be read)."""
        if self.stdin and self._piped is not None:
            return self._piped
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise InvalidInput(
                f"cannot read the answers file {self.path}: {reason}",
                hint="give --answers a UTF-8 text file with one answer per line",
            ) from None
        if self.stdin:
            self._piped = lines
        return lines

    def ask(self, question: str) -> str:
        lines = self.lines()
        if self.consumed >= len(lines) and self.stdin:
            raise AnswersExhausted(
                "the architect asks a question and there is no terminal to answer it: "
                f"pass --answers FILE (one answer a line) to `orange run resume {self.run}`, "
                "or resume it at a terminal"
            )
        if self.consumed >= len(lines):
            raise AnswersExhausted(
                f"the answers file ran out after {self.consumed} answers; add answers and "
                f"run `orange run resume {self.run}`"
            )
        answer = lines[self.consumed]
        self.consumed += 1
        self._echo(f"{question} {answer}")
        return answer


def is_affirmative(text: str) -> bool:
    """``y`` or ``yes`` in any case, surrounding whitespace ignored; nothing else."""
    return text.strip().lower() in ("y", "yes")
