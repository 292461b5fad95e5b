"""The task whose worktree a command runs in, when it is given no task id."""

from __future__ import annotations

from pathlib import Path

from orange import projects
from orange.engine.definitions import is_active
from orange.home import orange_home
from orange.projects import open_store
from orange.runtime.bindings import workspace_of
from orange.store import listing
from orange.store.task import Task


def task_of_workspace() -> str | None:
    """The task holding the worktree the command runs in, if it runs in one."""

    root = (orange_home() / "workspaces").resolve()
    cwd = Path.cwd().resolve()
    if root not in cwd.parents:
        return None
    name = cwd.relative_to(root).parts[0]
    for project in projects.load_all():
        if not name.startswith(f"{project.name}--"):
            continue
        snap = open_store(project).snapshot()
        holders = [
            task
            for task in listing.tasks(snap)
            if isinstance(task, Task) and task.str_field("workspace") == name
        ]
        # The task this host bound the worktree to, if any: a task that arrived in the
        # ref naming it is never taken for the worktree's own (DESIGN §8).
        bound = [task for task in holders if workspace_of(task) is not None]
        if len(bound) == 1:
            return bound[0].id
        if len(holders) > 1:  # a finished task that kept the name: ask its workflow
            holders = [task for task in holders if is_active(snap, task)]
        if holders:
            return holders[0].id
    return None
