"""Local effects of moves that arrived with a sync (DESIGN §7, §8).

A teammate's cancel or merge of a task this host runs ends it here too: the session
this host's Orange started is killed and the worktree it bound is released, unsaved
work snapshotted first (`orange.runtime.unbind.release_local` with ``force``).  Only for
tasks this host's local binding record names, and only when the task, as merged, stands
in a status its workflow does not count as active: the ref's runtime fields are never
enough, and no hook of the arriving definition runs (what arrives is data).  So does
a teammate's ``orange task take`` of a task this host runs: the task, as merged, is
bound to another host.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from orange.engine.definitions import is_active
from orange.engine.elsewhere import running_elsewhere
from orange.errors import OrangeError
from orange.home import host_name
from orange.projects import Project
from orange.runtime import bindings
from orange.runtime.unbind import release_local
from orange.store.store import TaskStore

if TYPE_CHECKING:
    from orange.runtime.tmux import Tmux


def release_ended(
    project: Project, store: TaskStore, task_ids: Iterable[str], *, tmux: Callable[[], Tmux]
) -> list[str]:
    """Release this host's bindings of the tasks among ``task_ids`` that ended; what
    was done, to say (``tmux``: the process's adapter, for their sessions)."""
    said: list[str] = []
    snap = store.snapshot()
    bound = {record.task for record in bindings.all_records(project.name)}  # one listing
    for task_id in task_ids:
        if task_id not in bound:
            continue
        try:
            task = snap.task(task_id)
            if task is None:
                continue
            active = is_active(snap, task)
            taker = running_elsewhere(task, active=active, here=host_name())
            if active and taker is None:
                continue
            done = release_local(project, task, force=True, tmux=tmux)
        except OrangeError as exc:
            said.append(f"warning: task {task_id} ended elsewhere; kept its worktree: {exc}")
            continue
        why = f"taken by {taker}" if taker else f"ended elsewhere ({task.status})"
        said += [f"task {task_id} {why}: {line}" for line in done]
    return said
