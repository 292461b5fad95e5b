"""Upgrading an installation from before local binding records (DESIGN §8).

Orange before records trusted the ref's runtime fields, so tasks running when it is
upgraded have no record, and the monitor would leave their agents alone.  Once per
project (the record store does not exist yet), a binding is adopted where this host
sees the task's worktree in the project's pool AND its live tmux session — what this
host's own Orange must have made.  A worktree or session claimed by two tasks is
adopted for neither.  Then the store's marker is written, and adoption never runs
again for that project: from then on a binding exists only where this host made one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from orange.errors import OrangeError
from orange.runtime import bindings

if TYPE_CHECKING:
    from orange.projects import Project
    from orange.runtime.tmux import Tmux
    from orange.store.store import Snapshot
    from orange.store.task import Task


def ensure_adopted(
    project: Project, snap: Snapshot | None = None, *, tmux: Callable[[], Tmux]
) -> int | None:
    """Adopt the running tasks of an older installation, once.  Returns how many were
    adopted, None when the store already existed (one stat: cheap on every call).
    A home that cannot be written or a tmux that cannot be asked leaves it for the
    next call, never an error.  ``tmux`` gives the process's tmux adapter
    (`orange.compose.tmux`), asked for only that one time."""
    if bindings.started(project.name):
        return None
    return adopt(project, snap, tmux=tmux)


def adopt(
    project: Project, snap: Snapshot | None = None, *, tmux: Callable[[], Tmux]
) -> int | None:
    """`ensure_adopted`'s work: record the adoptable tasks, mark the records started."""
    # The store and the listing: loaded the one time a project's records start (every
    # engine asks `ensure_adopted`; nearly always it has nothing to do).
    from orange.store.store import TaskStore, now_iso

    try:
        snap = snap if snap is not None else TaskStore(project.repo()).snapshot()
        found = _adoptable(snap, project.name, {p.session for p in tmux().panes()})
        for task in found:
            bindings.write(
                project.name,
                bindings.Binding(
                    task.id,
                    workspace=task.str_field("workspace"),
                    session=task.str_field("tmux_session"),
                    run=task.str_field("agent_run"),
                    adopted=True,
                ),
            )
        ids = " ".join(t.id for t in found)
        bindings.mark_started(project.name, f"{now_iso()} adopted {len(found)}: {ids}".strip())
    except (OSError, OrangeError):  # a read-only home, no tmux: the next call tries again
        return None
    return len(found)


def _adoptable(snap: Snapshot, project: str, live: set[str]) -> list[Task]:
    """Active tasks of ``project`` on this host whose worktree is in the pool and whose
    tmux session is live, with no record yet, each claiming what no other task does."""
    from orange.engine.definitions import Definitions
    from orange.home import host_name
    from orange.runtime.places import pool_path
    from orange.store import listing
    from orange.store.task import Task

    me = host_name()
    known = Definitions(snap)
    recorded = bindings.all_records(project)
    taken = {r.workspace for r in recorded} | {r.session for r in recorded}
    found = []
    for task in listing.tasks(snap):
        if not isinstance(task, Task) or task.project != project:
            continue
        if task.str_field("host") not in ("", me) or not known.task_is_active(task):
            continue
        path = pool_path(project, task.str_field("workspace"))
        session = task.str_field("tmux_session")
        if path is None or not (path / ".git").exists() or session not in live:
            continue
        if {path.name, session} & taken or bindings.read(project, task.id) is not None:
            continue
        found.append(task)
    places = Counter(t.str_field("workspace") for t in found)
    sessions = Counter(t.str_field("tmux_session") for t in found)
    return [
        t
        for t in found
        if places[t.str_field("workspace")] == 1 and sessions[t.str_field("tmux_session")] == 1
    ]
