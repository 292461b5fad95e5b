"""Ending a task's tmux session or window, also from inside it.

An agent that moves its own task runs ``orange task update`` inside the session the
move kills (fresh-worker's worker sending its work to review).  Killing it at once
would end that command before the move's other actions; killing it last by name would
kill the agent a later action of the same move started under that name.  So the
session (or window) is renamed now, freeing the name, and killed last (seed 001: the
session is killed, then the new agent runs in a new session).

Ending an agent waits for its process to be gone (`GRACE`, then SIGKILL), and only then
calls ``then`` (the ledger's record of what the agent wrote on its way out,
`orange.engine.engine.Engine.record_left`).

An agent ending itself (its tool runs this process: a reviewer's verdict kills its own
window) is killed outright (SIGKILL) before its tool returns, and this process ignores
the hang-up meanwhile.  Seen with Claude Code 2.1.197 (issue 30): on the hang-up of its
window it kills the running tool and goes on with its turn, asking the model once more;
that answer is written to its session file only if the program lives long enough, so
the ledger could not know what the model was paid for.  Killed before its tool
returns, the agent asks nothing more, and its session file already holds every call it
made (a program writes a model's answer before running the tool the answer asked for).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

from orange.runtime.tmux import Tmux

GRACE = 5.0  # seconds an ended agent has to exit (flushing its session file) before SIGKILL
Then = Callable[[], object] | None  # what to do once the ended agents are gone


def stop_agents(
    tmux: Tmux, defer: Callable[[Callable[[], None]], None], session: str, then: Then = None
) -> None:
    """End the process of every live pane of ``session`` and keep the panes: with
    ``remain-on-exit`` each shows how its agent ended, and the worker is started again in
    the same session by a later move (``notify_worker``) or `orange task respawn`.  The
    agent gets what tmux sends a pane it closes (SIGHUP to its process group), then
    SIGTERM; when this process runs in the session (an agent whose own move spent the
    budget) that comes last, after every other effect."""
    pids = _agents(tmux, session)
    if not pids:
        return
    if runs_inside(tmux, session):
        defer(lambda: _end_own(lambda: _hang_up(pids), pids, then))
    else:
        _hang_up(pids)
        _gone(pids, then)


def _agents(tmux: Tmux, session: str, window: str | None = None) -> list[int]:
    """The processes of the live panes of ``session`` (or of its ``window``)."""
    return [
        p.pid
        for p in tmux.panes()
        if p.session == session and (window is None or p.window == window)
        if not p.dead and p.pid
    ]


def _hang_up(pids: list[int], signals: tuple[int, ...] = (signal.SIGHUP, signal.SIGTERM)) -> None:
    for sig in signals:
        for pid in pids:  # a pane's process leads its own group (tmux makes it a session)
            try:
                os.killpg(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def _gone(pids: list[int], then: Then) -> None:
    """Wait until ``pids`` exited (SIGKILL to their groups after `GRACE`), then ``then``
    (also when one outlives its SIGKILL by another `GRACE`: never a wait without end)."""
    for last in (False, True):
        living = _wait(pids, GRACE)
        if not living:
            break
        if not last:
            _hang_up(living, (signal.SIGKILL,))
    if then is not None:
        then()


def _wait(pids: list[int], seconds: float) -> list[int]:
    """Those of ``pids`` still running after up to ``seconds`` of waiting for them."""
    deadline = time.monotonic() + seconds
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [pid for pid in pids if _alive(pid)]


def _end_own(kill: Callable[[], None], pids: list[int], then: Then) -> None:
    """End the agents of a session or window this process runs in, the caller's own
    agent first, at once (SIGKILL: its last model call is in its session file, written
    before its tool started this process), then the rest as ``kill`` ends them; this
    process ignores the hang-up meanwhile and calls ``then`` once they are gone.

    The own agent leads the terminal's session: its exit hangs the terminal up and sends
    SIGHUP to the processes in its foreground, the tmux client ``kill`` starts among
    them.  So ``kill`` waits until that exit is over: a client hung up mid-call printed
    no panes and the window outlived its kill (about one time in four, tmux 3.3a)."""
    for sig in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    ancestors = _ancestors()
    own = [pid for pid in pids if pid in ancestors]
    for pid in own:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    _wait(own, GRACE)
    kill()
    _gone(pids, then)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, which tmux has yet to reap, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
    except OSError:
        return True  # no /proc (macOS): it answered the signal, so it runs
    return text[text.rfind(b")") + 2 :][:1] != b"Z"


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
    then: Then = None,
) -> None:
    """Kill the session (or its window) now, or, when this process runs in it, set it
    aside now and hand its kill to ``defer`` (run after every other effect); either
    way ``then`` once its agents are gone."""
    pids = _agents(tmux, session, window)
    if not runs_inside(tmux, session, window):
        if window is None:
            tmux.kill_session(session)
        else:
            tmux.kill_window(session, window)
        _gone(pids, then)
        return
    aside = tmux.set_aside(session, window)
    if aside is None:
        return
    if window is None:
        defer(lambda: _end_own(lambda: tmux.kill_session(aside), pids, then))
    else:
        defer(lambda: _end_own(lambda: tmux.kill_window(session, aside), pids, then))
