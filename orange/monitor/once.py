"""``orange monitor --once`` as tmux's hooks run it: one pass at a time per Orange home.

Every agent pane that dies runs the hook, so killing the agents' tmux server starts one
``--once`` per session at the same moment.  Each asks for a pass (a flag file) and only
the one that takes the lock runs passes, until no request is left: whatever asked while
a pass ran is covered by the next one, and no two passes of this home overlap.

While a person has the monitor stopped (`orange monitor stop`), a pass only notes the
dead agents (`note_dead`): the hooks keep firing, and Orange acts on nothing until
`orange monitor start`, whose loop handles them (see `orange.runtime.watcher`).  An
``orange monitor --once`` typed by a person is no exception: the stop is undone by
`orange monitor start` only, so what a stop means never depends on who runs the pass.
"""

from __future__ import annotations

from pathlib import Path

from orange.monitor.loop import PassReport, log, pass_or_note
from orange.runtime.watcher import state_dir
from orange.store.lock import attempt


def _request() -> Path:
    return state_dir() / "once.requested"


def run_once() -> PassReport | None:
    """Run passes until nobody asks for one; None when another process runs them (it
    will also cover this request)."""
    request, lock = _request(), state_dir() / "once.lock"
    request.touch()
    report: PassReport | None = None
    while True:
        with attempt(lock) as got:
            if not got:
                return report
            while request.exists():
                request.unlink(missing_ok=True)
                log("pass (--once) started")
                report = pass_or_note()
                log("pass (--once) ended")
        # Released: a request made after our last look, by a process that found the lock
        # still taken, would be left unserved; look once more.
        if not request.exists():
            return report
