"""Finding the project, store and task a command is about."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from orange import projects
from orange.errors import InvalidInput, NotFound
from orange.home import orange_home
from orange.hooks.bindings import workspace_of
from orange.projects import Project, open_store
from orange.store.store import TaskStore
from orange.store.task import Task


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


def _task_of_workspace() -> str | None:
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
            for task in snap.tasks()
            if isinstance(task, Task) and task.str_field("workspace") == name
        ]
        # The task this host bound the worktree to, if any: a task that arrived in the
        # ref naming it is never taken for the worktree's own (DESIGN §8).
        bound = [task for task in holders if workspace_of(task) is not None]
        if len(bound) == 1:
            return bound[0].id
        if len(holders) > 1:  # a finished task that kept the name: ask its workflow
            # The workflows are loaded for this rare case only (the agents' hot path).
            from orange.engine.definitions import is_active

            holders = [task for task in holders if is_active(snap, task)]
        if holders:
            return holders[0].id
    return None


def locate(task: str | None, project_name: str | None) -> TaskRef:
    """Resolve a task id (or unique prefix) in this project, else in any project."""
    if not task:
        task = os.environ.get("ORANGE_TASK_ID") or _task_of_workspace()
    if not task:
        raise InvalidInput("no task id given", hint="pass the task id (see `orange task list`)")
    project = current_project(project_name)
    if project is not None:
        store = open_store(project)
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
