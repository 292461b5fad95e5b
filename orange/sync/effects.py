"""Local effects of moves that arrived with a sync (DESIGN §7, §8).

A teammate's cancel or merge of a task this host runs ends it here too: the session
this host's Orange started is killed and the worktree it bound is released, unsaved
work snapshotted first (`orange.hooks.unbind.release_local` with ``force``).  Only for
tasks this host's local binding record names, and only when the task, as merged, stands
in a status its workflow does not count as active: the ref's runtime fields are never
enough, and no hook of the arriving definition runs (what arrives is data).
"""

from __future__ import annotations

from collections.abc import Iterable

from orange.engine.definitions import is_active
from orange.errors import OrangeError
from orange.hooks import bindings
from orange.hooks.unbind import release_local
from orange.projects import Project
from orange.store.store import TaskStore


def release_ended(project: Project, store: TaskStore, task_ids: Iterable[str]) -> list[str]:
    """Release this host's bindings of the tasks among ``task_ids`` that ended; what
    was done, to say."""
    said: list[str] = []
    snap = store.snapshot()
    for task_id in task_ids:
        if bindings.read(project.name, task_id) is None:
            continue
        try:
            task = snap.task(task_id)
            if task is None or is_active(snap, task):
                continue
            done = release_local(project, task, force=True)
        except OrangeError as exc:
            said.append(f"warning: task {task_id} ended elsewhere; kept its worktree: {exc}")
            continue
        said += [f"task {task_id} ended elsewhere ({task.status}): {line}" for line in done]
    return said
