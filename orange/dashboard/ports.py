"""What the key handlers (`orange.dashboard.commands`) and the views
(`orange.dashboard.views`) ask of the dashboard: its source, a message line, the
selected row and the keys offered for it, the tmux adapter, and the few Textual app calls they make.
`orange.dashboard.app.Dashboard` is the one implementation; naming it here, not there,
keeps the app above the modules it drives (no import runs back up to it)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from textual.screen import Screen

from orange.dashboard.keys import Key
from orange.dashboard.rows import Row
from orange.dashboard.source import Source
from orange.runtime.tmuxclient import TmuxClient


class Host(Protocol):
    @property
    def source(self) -> Source: ...

    @property
    def exit_on_attach(self) -> bool: ...

    @property
    def tmux(self) -> TmuxClient:
        """The tmux adapter the composition root built (`orange.compose.tmux`)."""

    def say(self, line: str) -> None:
        """Show ``line`` on the message bar."""

    def watch_refs(self) -> None:
        """Read the tasks again if a ref moved, and redraw."""

    def background(self, work: Callable[[], str]) -> None:
        """Run ``work`` in a thread (it may wait on the network), then show its line,
        or its one-line error, and what changed."""

    def selected(self) -> Row | None: ...

    @property
    def shown_rows(self) -> list[Row]:
        """The rows the table shows (its view and filter), in its order."""

    def offered(self) -> list[Key]:
        """The task keys the selected task's workflow has a move for."""

    # Textual's App
    def push_screen(
        self, screen: Screen[Any], callback: Callable[[Any], None] | None = None
    ) -> object: ...

    def suspend(self) -> AbstractContextManager[None]: ...

    def exit(self) -> None: ...

    def copy_to_clipboard(self, text: str) -> None: ...
