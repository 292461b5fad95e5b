"""Finding the project, store and task a command is about."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from orange import projects
from orange.engine.caller import TASK_VARIABLE
from orange.errors import InvalidInput, NotFound, NotPermitted
from orange.projects import Project, open_store
from orange.runtime.bindings import holder_other_than, pool_worktree
from orange.store.store import TaskStore


class TaskRef(NamedTuple):  # not a dataclass: see `orange.store.task.Task`
    project: Project
    store: TaskStore
    task_id: str


def current_project(name: str | None) -> Project | None:
    """``--project`` if given, else the project around the cwd, else None."""
    if name:
        return projects.get(name)
    try:
        return projects.infer()
    except NotFound:
        return None


def locate(task: str | None, project_name: str | None) -> TaskRef:
    """Resolve a task id (or unique prefix) in this project, else in any project.
    Refused when ``ORANGE_TASK_ID`` names another task than the one bound to the
    worktree the command runs in (`check_worktree`)."""
    claimed = os.environ.get(TASK_VARIABLE)
    if claimed:
        check_worktree(claimed)
    if not task:
        # Finding the task from the cwd reads the listing: loaded only without an id.
        from orange.cli.workspace_task import task_of_workspace

        task = claimed or task_of_workspace()
    if not task:
        raise InvalidInput("no task id given", hint="pass the task id (see `orange task list`)")
    try:
        project, store = projects.infer_store(name=project_name)
    except NotFound:
        if project_name:
            raise
    else:
        return TaskRef(project, store, store.resolve(task))
    found: list[TaskRef] = []
    for candidate in projects.load_all():
        try:
            store = open_store(candidate)
            found.append(TaskRef(candidate, store, store.resolve(task)))
        except (NotFound, InvalidInput):
            continue
    if not found:
        raise NotFound(f"no task {task!r} in any registered project", hint="see `orange task list`")
    if len(found) > 1:
        names = ", ".join(ref.project.name for ref in found)
        raise InvalidInput(
            f"task {task!r} matches in several projects ({names})", hint="use --project"
        )
    return found[0]


def check_worktree(claimed: str) -> None:
    """The environment alone is not trusted (DESIGN §8): a command whose
    ``ORANGE_TASK_ID`` is ``claimed`` but that runs in a pool worktree this host bound
    to another task is refused.  (codex 0.171 ran one task's commands with another's
    environment, issue 25.)"""
    place = pool_worktree(Path.cwd())
    if place is None:
        return
    project, name = place
    holder = holder_other_than(project, name, claimed)
    if holder is not None:
        raise NotPermitted(
            f"this worktree ({name}) is bound to task {holder}, but {TASK_VARIABLE} "
            f"names task {claimed}",
            hint=f"run it in the worktree of task {claimed}",
        )
