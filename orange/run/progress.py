"""Progress of a run, for a person or for a pipe.

The run reports `Event`s (a step started, a wave waits for worktrees, a subtask is
testing in its second iteration...).  On a terminal they feed a live view: the run's
step, its wave and each subtask with its state and how long it has been in it.
Anywhere else each event is one plain line, e.g. ``run r1: subtask s2 testing
(iteration 2)``; with ``--json`` those lines go to stderr and stdout keeps only the one
JSON document.  Events may come from several threads at once (a wave's subtasks).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import NamedTuple, Protocol, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text


class Event(NamedTuple):
    kind: str  # "step" | "wave" | "subtask" | "agent" | "note" ...
    run: str
    step: str  # the run's step (seed 004's names: PLANNING, SUBTASK_TESTING...)
    subtask: str | None  # the subtask an event is about, if any
    status: str  # a word: started, waiting, implementing, testing, done, failed...
    message: str  # detail, may be empty ("iteration 2", "1 of 2 worktrees free")


class Progress(Protocol):
    def event(self, e: Event) -> None: ...

    def close(self) -> None: ...


def line(e: Event) -> str:
    """One event as one line: ``run r1: subtask s2 testing (iteration 2)``."""
    who = f"subtask {e.subtask}" if e.subtask else e.step
    text = " ".join(f"run {e.run}: {who} {e.status}".split())
    message = " ".join(e.message.split())
    return f"{text} ({message})" if message else text


def elapsed(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def progress_for(stream: TextIO, *, json_mode: bool) -> Progress:
    """The live view on a terminal, lines elsewhere; with ``json_mode`` nothing on
    ``stream`` (stdout): lines on stderr."""
    if json_mode:
        return LineProgress(sys.stderr)
    if stream.isatty():
        return LiveProgress(stream)
    return LineProgress(stream)


class LineProgress:
    """One line per event, written whole and flushed."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._lock = threading.Lock()

    def event(self, e: Event) -> None:
        with self._lock:
            self.stream.write(line(e) + "\n")
            self.stream.flush()

    def close(self) -> None:
        pass


class _Row(NamedTuple):
    status: str
    message: str
    since: float  # monotonic time the status was entered


class LiveProgress:
    """A rich live view of the run: step, wave, subtasks, last note."""

    def __init__(self, stream: TextIO, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._now = clock
        self._lock = threading.Lock()
        self._run = ""
        self._step = _Row("starting", "", self._now())
        self._wave: _Row | None = None
        self._subtasks: dict[str, _Row] = {}
        self._note = ""
        self._live = Live(
            get_renderable=self._render,
            console=Console(file=stream),
            refresh_per_second=4,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()

    def event(self, e: Event) -> None:
        with self._lock:
            self._run = e.run
            if e.subtask:
                self._subtasks[e.subtask] = self._moved(self._subtasks.get(e.subtask), e)
            elif e.kind == "wave":
                self._wave = self._moved(self._wave, e, label=e.step)
            elif e.kind == "step":
                self._step = self._moved(self._step, e, label=e.step)
            else:
                self._note = line(e)
        self._live.refresh()

    def _moved(self, row: _Row | None, e: Event, label: str = "") -> _Row:
        status = f"{label} {e.status}".strip() if label else e.status
        same = row is not None and row.status == status
        return _Row(status, e.message, row.since if row is not None and same else self._now())

    def _render(self) -> RenderableType:
        now = self._now()
        with self._lock:
            table = Table(title=f"orange run {self._run}".strip(), title_justify="left")
            for column in ("", "state", "detail", "time"):
                table.add_column(column)
            rows = [("step", self._step)]
            if self._wave is not None:
                rows.append(("wave", self._wave))
            rows += [(f"subtask {name}", row) for name, row in self._subtasks.items()]
            for name, row in rows:
                table.add_row(name, row.status, row.message, elapsed(now - row.since))
            note = Text(self._note)
        return Group(table, note) if self._note else table

    def close(self) -> None:
        self._live.stop()
