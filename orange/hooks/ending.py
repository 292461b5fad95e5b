"""Ending a task's tmux session or window, also from inside it.

An agent that moves its own task runs ``orange task update`` inside the session the
move kills (fresh-worker's worker sending its work to review).  Killing it at once
would end that command before the move's other actions; killing it last by name would
kill the agent a later action of the same move started under that name.  So the
session (or window) is renamed now, freeing the name, and killed last (seed 001: the
session is killed, then the new agent runs in a new session).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from orange.hooks.tmux import Tmux


def runs_inside(tmux: Tmux, session: str, window: str | None = None) -> bool:
    """Whether this process runs in that tmux session (or window): an agent moving its
    own task.  Killing it then must wait until every other effect is done."""
    own = os.environ.get("TMUX_PANE")
    if not own:
        return False
    return any(
        p.pane_id == own and p.session == session and (window is None or p.window == window)
        for p in tmux.panes()
    )


def end(
    defer: Callable[[Callable[[], None]], None], session: str, window: str | None = None
) -> None:
    """Kill the session (or its window) now, or, when this process runs in it, set it
    aside now and hand its kill to ``defer`` (run after every other effect)."""
    tmux = Tmux()
    if not runs_inside(tmux, session, window):
        if window is None:
            tmux.kill_session(session)
        else:
            tmux.kill_window(session, window)
        return
    aside = tmux.set_aside(session, window)
    if aside is None:
        return
    if window is None:
        defer(lambda: tmux.kill_session(aside))
    else:
        defer(lambda: tmux.kill_window(session, aside))
