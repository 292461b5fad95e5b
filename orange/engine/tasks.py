"""Task operations that are not status changes: create, update fields, edit, delete.

Creation lives here, with the engine, because it chooses the initial status from the
task's workflow and commits that workflow's definition into the ref; nothing outside
the engine writes ``status``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from orange.errors import InvalidInput, NotFound
from orange.home import host_name
from orange.store import layout
from orange.store.branches import check_branch_name
from orange.store.events import Change
from orange.store.store import Snapshot, TaskStore, now_iso
from orange.store.task import Task, ordered

if TYPE_CHECKING:
    from orange.engine.engine import WorkingCopies
    from orange.engine.workflow import Workflow
    from orange.projects import Project

# Fields only the engine may set, never `task update` or a hand edit.
ENGINE_FIELDS = frozenset({"status", "id", "project", "workflow", "workflow_rev"})


def workflow_rev(workflow: Workflow) -> str:
    return hashlib.sha1(workflow.source_text.encode()).hexdigest()[:10]


def workflow_writes(snap: Snapshot, workflow: Workflow) -> dict[str, bytes | None]:
    """Commit a workflow definition into the ref the first time it is used.

    ``meta/workflows/<name>.yml`` holds the first definition used under a name.  If the
    user's file changes later, the new text goes to ``meta/workflows/<name>@<rev>.yml``
    and new tasks record that ``workflow_rev``: old tasks keep the rules they were
    created under, new ones get the edited rules.
    """
    text = workflow.source_text.encode()
    rev = workflow_rev(workflow)
    primary = layout.workflow_path(workflow.name)
    existing = snap.read(primary)
    if existing is None:
        return {primary: text}
    if existing == text:
        return {}
    variant = layout.workflow_path(f"{workflow.name}@{rev}")
    return {} if snap.read(variant) is not None else {variant: text}


class TreeReader(Protocol):
    def read(self, path: str) -> bytes | None: ...


def committed_workflow_text(snap: TreeReader, task: Task) -> str | None:
    """The definition a task was created under, from the ref."""
    name = task.workflow
    rev = task.str_field("workflow_rev")
    primary = snap.read(layout.workflow_path(name))
    if primary is not None and (not rev or hashlib.sha1(primary).hexdigest()[:10] == rev):
        return primary.decode()
    variant = snap.read(layout.workflow_path(f"{name}@{rev}")) if rev else None
    return None if variant is None else variant.decode()


def create_task(
    store: TaskStore,
    project: Project,
    workflow: Workflow,
    *,
    summary: str = "",
    branch: str | None = None,
    context: str | None = None,
    status: str | None = None,
    harness: str = "",
    review_harness: str = "",
    extra: dict[str, Any] | None = None,
) -> Task:
    summary = " ".join(summary.split()) if summary else ""
    initial = _initial_status(workflow, status, summary)
    if branch is not None:
        check_branch_name(branch)
    created: list[Task] = []

    def compute(snap: Snapshot) -> Change:
        task_id = _unused_id(snap)
        task_branch = branch or f"orange-tasks/{task_id}"
        _check_branch_unique(snap, project.name, task_branch, None)
        stamp = now_iso()
        fields: dict[str, Any] = {
            "id": task_id,
            "project": project.name,
            "branch": task_branch,
            "workflow": workflow.name,
            "harness": harness,
            "review_harness": review_harness,
            "status": initial,
            "review_round": 0,
            "crash_count": 0,
            "summary": summary,
            "host": host_name(),
            "workspace": None,
            "tmux_session": None,
            "attention": None,
            "pr_url": None,
            "created_at": stamp,
            "updated_at": stamp,
            "workflow_rev": workflow_rev(workflow),
        }
        fields.update(extra or {})
        body = ""
        if context and context.strip():
            body = f"\n## Context\n\n{context.strip()}\n"
        task = Task(fields=ordered(fields), body=body)
        created[:] = [task]
        writes: dict[str, bytes | None] = {task.path: task.render().encode()}
        writes.update(workflow_writes(snap, workflow))
        title = f'"{summary}"' if summary else "(no summary)"
        return Change(
            task_id=task_id,
            event="task.created",
            subject=f"task {task_id}: created {title} [{initial}]",
            writes=writes,
            trailers=(("Orange-To", initial), ("Orange-Workflow", workflow.name)),
        )

    store.commit(compute)
    return created[0]


def update_fields(
    store: TaskStore, task_id: str, changes: dict[str, Any], copies: WorkingCopies | None = None
) -> Task:
    """Set plain frontmatter fields (summary, branch, ...), one ``task.updated`` commit."""
    forbidden = sorted(ENGINE_FIELDS & changes.keys())
    if forbidden:
        raise InvalidInput(
            f"{', '.join(forbidden)} cannot be set this way",
            hint="status changes go through `orange task update --status`",
        )
    if "branch" in changes:
        check_branch_name(str(changes["branch"]))
    if "summary" in changes:
        changes["summary"] = " ".join(str(changes["summary"]).split())

    def mutate(snap: Snapshot, task: Task) -> Task | None:
        if "branch" in changes:
            _check_branch_unique(snap, task.project, str(changes["branch"]), task.id)
        if all(task.fields.get(key) == value for key, value in changes.items()):
            return None
        return task.with_fields(**changes)

    return _write(
        store, task_id, mutate, event="task.updated", what=", ".join(changes), copies=copies
    )


def edit_body(
    store: TaskStore,
    task_id: str,
    new_body: Callable[[Task], str],
    what: str,
    copies: WorkingCopies | None = None,
) -> Task:
    """Replace the body (or a section of it, via ``new_body``), one commit."""

    def mutate(snap: Snapshot, task: Task) -> Task | None:
        body = new_body(task)
        return None if body == task.body else task.with_body(body)

    return _write(
        store, task_id, mutate, event="task.updated", what=what, field_names="body", copies=copies
    )


def delete_task(store: TaskStore, task_id: str) -> Task:
    deleted: list[Task] = []

    def compute(snap: Snapshot) -> Change:
        task = _require(snap, task_id)
        if task.is_active:
            raise InvalidInput(
                f"task {task.id} is {task.status}; only done or cancelled tasks can be deleted",
                hint=f"cancel it first: orange task cancel {task.id}",
            )
        deleted[:] = [task]
        return Change(
            task_id=task.id,
            event="task.deleted",
            subject=f"task {task.id}: deleted",
            writes={task.path: None},
        )

    store.commit(compute)
    return deleted[0]


def _write(
    store: TaskStore,
    task_id: str,
    mutate: Callable[[Snapshot, Task], Task | None],
    *,
    event: str,
    what: str,
    field_names: str | None = None,
    copies: WorkingCopies | None = None,
) -> Task:
    """One commit of ``mutate``'s change.  With ``copies``, the agent's working copy is
    taken in first (DESIGN §3): every write from any side keeps the other's words."""
    result: list[Task] = []

    def compute(snap: Snapshot) -> Change | None:
        task = _require(snap, task_id)
        names = field_names or what
        merged = copies.take_in(task) if copies is not None else None
        if merged is not None and merged[0] != task.body:
            task = task.with_body(merged[0])
            names += ", body"
        changed = mutate(snap, task)
        if changed is None:
            result[:] = [task]
            return None
        changed = changed.with_fields(updated_at=now_iso())
        result[:] = [changed]
        return Change(
            task_id=task.id,
            event=event,
            subject=f"task {task.id}: updated {what}",
            writes={task.path: changed.render().encode()},
            trailers=(("Orange-Fields", names),),
        )

    store.commit(compute)
    return result[0]


def _require(snap: Snapshot, task_id: str) -> Task:
    task = snap.task(task_id)
    if task is None:
        raise NotFound(f"no task {task_id!r}", hint="see `orange task list --all`")
    return task


def _unused_id(snap: Snapshot) -> str:
    while True:
        candidate = layout.new_task_id()
        if snap.read(layout.task_path(candidate)) is None:
            return candidate


def _check_branch_unique(snap: Snapshot, project: str, branch: str, own_id: str | None) -> None:
    for other in snap.tasks():
        if not isinstance(other, Task) or other.id == own_id:
            continue
        if other.project == project and other.branch == branch:
            raise InvalidInput(
                f"branch {branch!r} is already used by task {other.id}",
                hint="choose another branch name",
            )


def _initial_status(workflow: Workflow, status: str | None, summary: str) -> str:
    allowed = list(workflow.initial_statuses)
    if status is None:
        if not summary and workflow.empty_summary_status:
            return workflow.empty_summary_status
        return allowed[0]
    if status not in allowed:
        raise InvalidInput(
            f"a {workflow.name} task cannot start in {status!r}",
            hint=f"initial statuses: {', '.join(allowed)}",
        )
    return status
