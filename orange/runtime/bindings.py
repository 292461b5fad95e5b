"""This host's own record of what its Orange bound to a task (DESIGN §8).

The runtime fields of a task in ``refs/orange/tasks`` (``host``, ``workspace``,
``tmux_session``, ``agent_run``) are shared data: a teammate's push or anyone's plain
git commit can put any value there.  So nothing on this machine is killed, removed,
reset or started because the ref says so.  When this host's Orange binds a worktree or
starts an agent it also writes a local record, and every such side effect needs both:

- the record names it (this host made the binding), and
- the ref agrees (the binding is still the task's: a record left by a move that was
  prepared but never committed, or by an effect that crashed half-way, names what the
  ref no longer does, and is ignored).

Where: ``$ORANGE_HOME/bindings/<host>/<project>/<task id>``, one small JSON file a
task.  Not in the repository's git dir: what a record names lives here — the pool's
worktrees are ``$ORANGE_HOME/workspaces/<project>--<n>`` and the sessions are on this
host's tmux server — and every reader (the agent's working-copy sync on the hottest
path, which knows a task and its project name, not its repository) finds it with no
repository at hand.  Per host because a home directory on a network share is shared by
machines whose tmux servers are not.  Per project, as the pool is.

Crash-safe: a record is written to a temporary file and renamed into place, so readers
see the old record or the new one; a file that does not parse as a record (cut short,
edited, garbage) counts as no record and is never an error.  Hook actions write a record
while this host's per-task lock is held (`Engine.busy`: a move prepares and carries out
its effects under it), so one task's record has one writer at a time; the one other
writer, a branch rename, changes only the session name of a task it just renamed.

The ``adopted`` marker file in a project's folder says the store exists: an
installation from before records gets its running tasks adopted once
(`orange.runtime.adopt`), and never again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

from orange.errors import OrangeError
from orange.home import host_name, orange_home
from orange.runtime.places import pool_path, workspaces_root
from orange.store.files import replace_file
from orange.store.layout import valid_task_id
from orange.store.task import Task

MARKER = "adopted"
_FIELDS = ("workspace", "session", "run", "dead")


class Binding(NamedTuple):  # not a dataclass: read on every command (engine.workflow)
    """What this host bound to one task: its pool worktree's name, its tmux session,
    the ``agent_run`` of the agent it last started (empty: none) and the death this
    host's monitor handled last (``<run>@<status>``, empty: none).  The monitor keys
    deaths on these two, never on the ref's ``agent_run``/``dead_run``, which anyone
    with push access may set (`orange.engine.monitoring`)."""

    task: str
    workspace: str = ""
    session: str = ""
    run: str = ""
    dead: str = ""
    adopted: bool = False  # made by the one-time adoption of an older installation

    @property
    def empty(self) -> bool:
        return not (self.workspace or self.session)


def _safe(name: str) -> str:
    """A host or project name as one path component (ORANGE_HOST is free text)."""
    cleaned = name.replace(os.sep, "_").replace("\0", "_")
    return cleaned if cleaned not in ("", ".", "..") else f"_{cleaned}_"


def project_dir(project: str) -> Path:
    return orange_home() / "bindings" / _safe(host_name()) / _safe(project)


def _path(project: str, task_id: str) -> Path | None:
    if not valid_task_id(task_id):
        return None  # an id from the ref that could name another file: no record
    return project_dir(project) / task_id


def read(project: str, task_id: str) -> Binding | None:
    """The record of ``task_id``; None when there is none or it is not a valid one."""
    path = _path(project, task_id)
    if path is None:
        return None
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("task") != task_id:
        return None
    values = {key: data.get(key, "") for key in _FIELDS}
    if not all(isinstance(v, str) for v in values.values()):
        return None
    return Binding(task_id, adopted=data.get("adopted") is True, **values)


def all_records(project: str) -> list[Binding]:
    """Every valid record of ``project`` on this host."""
    folder = project_dir(project)
    names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    found = (read(project, name) for name in names if name != MARKER)
    return [rec for rec in found if rec is not None]


def write(project: str, binding: Binding) -> None:
    """Record ``binding`` atomically (an empty one removes the record)."""
    path = _path(project, binding.task)
    if path is None:
        return
    if binding.empty:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, json.dumps(binding._asdict()))


def record(
    project: str,
    task_id: str,
    *,
    workspace: str | None = None,
    session: str | None = None,
    run: str | None = None,
    dead: str | None = None,
) -> Binding:
    """Change some fields of a task's record (creating it; None: keep), and return it.
    A record left with neither a worktree nor a session is removed."""
    current = read(project, task_id) or Binding(task_id)
    updated = current._replace(
        workspace=current.workspace if workspace is None else workspace,
        session=current.session if session is None else session,
        run=current.run if run is None else run,
        dead=current.dead if dead is None else dead,
    )
    if updated != current:
        write(project, updated)
    return updated


def workspace_of(task: Task) -> Path | None:
    """The task's worktree on this host: the pool worktree this host recorded for it,
    while the ref still names it.  Never a path outside the project's pool."""
    name = task.str_field("workspace")
    if not name or task.str_field("host") not in ("", host_name()):
        return None
    rec = read(task.project, task.id)
    if rec is None or rec.workspace != name:
        return None
    return pool_path(task.project, name)


def pool_worktree(path: Path) -> tuple[str, str] | None:
    """The project and the name of the pool worktree ``path`` is in (None: in none)."""
    try:
        name = path.resolve().relative_to(workspaces_root().resolve()).parts[0]
    except (ValueError, IndexError):  # outside the pool, or the pool's folder itself
        return None
    project = name.rpartition("--")[0]
    return (project, name) if pool_path(project, name) is not None else None


def holder_other_than(project: str, name: str, task_id: str) -> str | None:
    """The task this host bound ``project``'s pool worktree ``name`` to, when that is
    not ``task_id`` (an id or a prefix of one); None when it is, or when the worktree
    is bound to no task.

    ``task_id``'s own record naming the worktree settles it with one small file read
    (the agents' hottest path).  Another task's record counts only while the ref still
    names the worktree for that task (`workspace_of`): a record is never enough alone."""
    own = read(project, task_id)
    if own is not None and own.workspace == name:
        return None
    others = [
        rec.task
        for rec in all_records(project)
        if rec.workspace == name and not rec.task.startswith(task_id)
    ]
    if not others:
        return None
    # The ref is read only here, where a record names another task.
    from orange.projects import get, open_store

    try:
        store = open_store(get(project))
    except OrangeError:  # no such project (any more): nothing of it is bound here
        return None
    for other in others:
        try:
            task = store.get(other)
        except OrangeError:
            continue
        if workspace_of(task) is not None:
            return task.id
    return None


def session_of(task: Task) -> str | None:
    """The task's tmux session on this host: the one this host recorded starting for
    it, while the ref still names it."""
    name = task.str_field("tmux_session")
    if not name or task.str_field("host") not in ("", host_name()):
        return None
    rec = read(task.project, task.id)
    return name if rec is not None and rec.session == name else None


def started(project: str) -> bool:
    """Whether this project's record store exists (adoption was done, or not needed)."""
    return (project_dir(project) / MARKER).is_file()


def mark_started(project: str, note: str) -> None:
    """Create the record store: from now on only records count."""
    folder = project_dir(project)
    folder.mkdir(parents=True, exist_ok=True)
    replace_file(folder / MARKER, note + "\n")
