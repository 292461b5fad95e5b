"""Dependencies between tasks: ``after:`` (DESIGN §10).

``after`` is a human-owned field of TASK.md (`orange.engine.policy`): the ids of the
tasks this one waits for.  It lives in the ref, so teammates see it and ``git log``
records it; its shape is all the replay checker judges (a list of task ids).  That the
ids name tasks and make no cycle is checked where a human sets them (`checked`), on the
tip the change is made on.

A task waits until each task it names is in its workflow's ``role: done`` state
(merged): until then the queue passes over it and a human's start is refused
(`require_ready`).  A named task that is missing, cancelled or unreadable keeps it
waiting: a human decides (``orange task update ID --no-after``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from orange.engine.definitions import Definitions
from orange.errors import InvalidInput, NotFound
from orange.store.layout import valid_task_id
from orange.store.store import Snapshot, TaskStore
from orange.store.task import Task

FIELD = "after"  # its check: `orange.engine.policy`


def listed(task: Task) -> list[str]:
    """The ids ``task`` names in ``after`` (none when the field is absent or malformed:
    a malformed one never reaches the ref through Orange or the server's checker)."""
    value = task.fields.get(FIELD)
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str) and valid_task_id(item)]


def parse(text: str) -> list[str]:
    """``ID[,ID...]`` (commas or spaces) as written on the command line, in order."""
    found: list[str] = []
    for item in re.split(r"[,\s]+", text.strip()):
        if item and item not in found:
            found.append(item)
    if not found:
        raise InvalidInput("--after names no task", hint="pass --after ID[,ID...]")
    return found


def resolve(
    store: TaskStore, snap: Snapshot, given: Iterable[str], project: str | None = None
) -> list[str]:
    """Full ids of ``given`` (ids or unique prefixes); an unknown or cancelled one is
    refused.  ``project``: the name of the project ``store`` holds, to say so when an
    unknown id is a task of another registered project."""
    known = Definitions(snap)
    ids: list[str] = []
    for prefix in given:
        try:
            task_id = store.resolve(prefix, snap)
        except NotFound:
            if project is not None:
                _refuse_elsewhere(prefix, project)
            raise InvalidInput(
                f"--after: no task {prefix!r}", hint="see `orange task list --all`"
            ) from None
        other = snap.task(task_id)
        if other is not None:
            _refuse_cancelled(other, known)
        if task_id not in ids:
            ids.append(task_id)
    return ids


def _refuse_elsewhere(prefix: str, project: str) -> None:
    """Say where a task this project does not have lives, when another registered
    project has it: dependencies hold only within one project (one repository, one
    tasks ref, one merge order)."""
    from orange import projects  # the registry: read for this refusal only

    found = projects.holding(prefix, besides=project)
    if not found:
        return
    name, task_id = found[0]
    raise InvalidInput(
        f"--after: task {task_id} is in project {name}, not {project}: a task waits only "
        f"for tasks of its own project",
        hint=f"create this task in {name} with --project {name}, or leave {task_id} out "
        f"and start this one by hand once it is merged",
    )


def _refuse_cancelled(task: Task, known: Definitions) -> None:
    """A task cannot wait for a cancelled one: nothing would ever start it."""
    workflow = known.of(task)
    if workflow is not None and task.status == workflow.cancelled_state:
        raise InvalidInput(
            f"--after: task {task.id} is cancelled; nothing would ever start this one",
            hint="name the tasks it really waits for",
        )


def checked(snap: Snapshot, task_id: str, ids: list[str]) -> None:
    """Refuse, in one line, dependencies of ``task_id`` on itself, on a task that does
    not exist, or that close a cycle (a task named waits, at any depth, for this one)."""
    if task_id in ids:
        raise InvalidInput(f"task {task_id} cannot wait for itself")
    known = Definitions(snap)
    for dep in ids:
        other = snap.task(dep)
        if other is None:
            raise InvalidInput(f"--after: no task {dep!r}", hint="see `orange task list --all`")
        _refuse_cancelled(other, known)
    path = _path_to(snap, ids, task_id)
    if path:
        chain = " -> ".join([task_id, *path])
        raise InvalidInput(
            f"task {task_id} cannot wait for {path[0]}: that makes a cycle ({chain})"
        )


def _path_to(snap: Snapshot, start: list[str], target: str) -> list[str]:
    """A chain of ``after`` links from one of ``start`` to ``target`` (empty: none)."""
    seen: set[str] = set()
    stack = [[dep] for dep in reversed(start)]
    while stack:
        path = stack.pop()
        if path[-1] == target:
            return path
        if path[-1] in seen:
            continue
        seen.add(path[-1])
        task = snap.task(path[-1])
        if task is not None:
            stack.extend([*path, dep] for dep in reversed(listed(task)))
    return []


def waiting_for(snap: Snapshot, known: Definitions, task: Task) -> list[str]:
    """The tasks ``task`` still waits for: those named in ``after`` not yet done."""
    waiting = []
    for dep in listed(task):
        other = snap.task(dep)
        workflow = None if other is None else known.of(other)
        if other is None or workflow is None or other.status != workflow.done_state:
            waiting.append(dep)
    return waiting


class Place(NamedTuple):  # not a dataclass: see `orange.engine.workflow`
    """One line of the ``after:`` forest (`forest`): a task at ``depth`` under the
    first listed task it waits for; ``again``: already drawn in full further up (it
    waits for several listed tasks)."""

    task: Task
    depth: int
    again: bool = False

    def lead(self) -> str:
        """The line's indent: ``└─`` under the task above, two spaces a level."""
        return "  " * (self.depth - 1) + "└─ " if self.depth else ""


def forest(tasks: Iterable[Task]) -> list[Place]:
    """``tasks`` as a forest of ``after:`` links, in the order they can be merged: each
    task under the listed tasks it waits for (in full under the first, marked ``again``
    under the others), roots and siblings oldest first.  A cycle pushed by someone
    (no root reaches it) is drawn from its oldest task."""
    shown = {task.id: task for task in tasks}
    below: dict[str, list[Task]] = {}
    for task in shown.values():
        for dep in listed(task):
            if dep in shown:
                below.setdefault(dep, []).append(task)
    oldest = sorted(shown.values(), key=_age)
    placed: set[str] = set()
    out: list[Place] = []

    def draw(root: Task) -> None:  # depth first, without recursion: a chain may be long
        stack = [(root, 0)]
        while stack:
            task, depth = stack.pop()
            if task.id in placed:
                out.append(Place(task, depth, again=True))
                continue
            placed.add(task.id)
            out.append(Place(task, depth))
            children = sorted(below.get(task.id, []), key=_age, reverse=True)
            stack.extend((child, depth + 1) for child in children)

    for task in oldest:
        if not any(dep in shown for dep in listed(task)):
            draw(task)
    for task in oldest:
        if task.id not in placed:
            draw(task)
    return out


def _age(task: Task) -> tuple[str, str]:
    return task.str_field("created_at"), task.id


def unmerged(snap: Snapshot, task: Task) -> list[str]:
    """`waiting_for`, for one task."""
    return waiting_for(snap, Definitions(snap), task) if listed(task) else []


def require_ready(snap: Snapshot, task: Task) -> None:
    """Refuse to start ``task`` while it waits for another, saying which."""
    waiting = unmerged(snap, task)
    if waiting:
        raise InvalidInput(
            f"task {task.id} waits for {', '.join(waiting)} (not merged yet)",
            hint=f"merge those first, or drop the dependency: orange task update {task.id} "
            "--no-after",
        )
