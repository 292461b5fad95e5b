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
import signal
from collections.abc import Callable

from orange.runtime.tmux import Tmux


def stop_agents(tmux: Tmux, defer: Callable[[Callable[[], None]], None], session: str) -> None:
    """End the process of every live pane of ``session`` and keep the panes: with
    ``remain-on-exit`` each shows how its agent ended, and the worker is started again in
    the same session by a later move (``notify_worker``) or `orange task respawn`.  The
    agent gets what tmux sends a pane it closes (SIGHUP to its process group), then
    SIGTERM; when this process runs in the session (an agent whose own move spent the
    budget) that comes last, after every other effect."""
    pids = [p.pid for p in tmux.panes() if p.session == session and not p.dead and p.pid]
    if not pids:
        return
    if runs_inside(tmux, session):
        defer(lambda: _hang_up(pids))
    else:
        _hang_up(pids)


def _hang_up(pids: list[int]) -> None:
    for sig in (signal.SIGHUP, signal.SIGTERM):
        for pid in pids:  # a pane's process leads its own group (tmux makes it a session)
            try:
                os.killpg(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def runs_inside(tmux: Tmux, session: str, window: str | None = None) -> bool:
    """Whether this process runs in that tmux session (or window): an agent moving its
    own task.  Killing it then must wait until every other effect is done.

    Known by ``TMUX_PANE``, or else by ancestry (a pane's process is an ancestor of
    this one): an agent's tool may run commands without tmux's variables."""
    panes = [
        p for p in tmux.panes() if p.session == session and (window is None or p.window == window)
    ]
    own = os.environ.get("TMUX_PANE")
    if own and any(p.pane_id == own for p in panes):
        return True
    pids = {p.pid for p in panes if p.pid and not p.dead}
    return bool(pids) and not pids.isdisjoint(_ancestors())


def _ancestors() -> set[int]:
    """The pids of this process's parent, its parent, and so on up to init."""
    parents = _parents()
    found: set[int] = set()
    pid = os.getppid()
    while pid > 1 and pid not in found:
        found.add(pid)
        pid = parents(pid)
    return found


def _parents() -> Callable[[int], int]:
    """A pid's parent pid (0 when unknown): from /proc where there is one, else from
    one `ps` listing of every process (macOS)."""
    if os.path.isdir("/proc/self"):
        return _proc_parent
    # Only where there is no /proc, and only for a kill: not loaded on every move.
    import subprocess

    listing = subprocess.run(
        ["ps", "-A", "-o", "pid=", "-o", "ppid="], capture_output=True, text=True, check=False
    ).stdout
    table = {}
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit():
            table[int(fields[0])] = int(fields[1])
    return lambda pid: table.get(pid, 0)


def _proc_parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
    except OSError:
        return 0
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    fields = text[text.rfind(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0


def end(
    tmux: Tmux,
    defer: Callable[[Callable[[], None]], None],
    session: str,
    window: str | None = None,
) -> None:
    """Kill the session (or its window) now, or, when this process runs in it, set it
    aside now and hand its kill to ``defer`` (run after every other effect)."""
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
