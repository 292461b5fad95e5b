"""Creating and deleting a task.

Creation lives here, with the engine, because it chooses the initial status from the
task's workflow and commits that workflow's definition into the ref; nothing outside
the engine writes ``status``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orange.engine import localqueue
from orange.engine.caller import HUMAN, Caller
from orange.engine.definitions import is_active, workflow_of, workflow_rev, workflow_writes
from orange.engine.policy import own_branch_problem
from orange.engine.records import Written, require
from orange.errors import InvalidInput, NotPermitted
from orange.home import host_name
from orange.store import layout
from orange.store.branches import check_branch_name
from orange.store.listing import check_branch_unique
from orange.store.store import Snapshot, TaskStore, now_iso
from orange.store.task import Task, ordered

if TYPE_CHECKING:
    from orange.engine.workflow import Workflow
    from orange.projects import Project


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
    park: bool = False,
) -> Task:
    """Create a task; this host's queue holds it (`localqueue`), ``park``ed when only a
    human is to start it (``--no-spawn``)."""
    summary = " ".join(summary.split()) if summary else ""
    initial = initial_status(workflow, status, summary)
    if branch is not None:
        check_branch_name(branch)
        check_own_branch(branch, str((extra or {}).get("base") or ""), project.default_branch)

    def compute(snap: Snapshot) -> Written:
        task_id = _unused_id(snap)
        task_branch = branch or f"orange-tasks/{task_id}"
        check_branch_unique(snap, project.name, task_branch, None)
        fields: dict[str, Any] = {
            "id": task_id,
            "project": project.name,
            "branch": task_branch,
            "workflow": workflow.name,
            "harness": harness,
            "review_harness": review_harness,
            "status": initial,
            "summary": summary,
            "workflow_rev": workflow_rev(workflow),
            **(extra or {}),
        }
        return _creation(snap, workflow, _new_task(fields, context))

    created = store.commit(compute).task
    if park:  # before it is queued: spawn_next never sees it unparked
        localqueue.park(store, created.id)
    localqueue.enter(store, created.id)  # created here: this host may start it (§8)
    return created


def _creation(snap: Snapshot, workflow: Workflow, task: Task) -> Written:
    """The commit that creates ``task`` (and commits its workflow's definition)."""
    writes: dict[str, bytes | None] = {task.path: task.render().encode()}
    writes.update(workflow_writes(snap, workflow))
    title = f'"{task.summary}"' if task.summary else "(no summary)"
    return Written(
        task_id=task.id,
        event="task.created",
        subject=f"task {task.id}: created {title} [{task.status}]",
        writes=writes,
        trailers=(("Orange-To", task.status), ("Orange-Workflow", workflow.name)),
        task=task,
    )


def _new_task(given: dict[str, Any], context: str | None) -> Task:
    """A new task: the given fields, with every other field of the frontmatter at its
    starting value, in the usual order; the context, if any, as its first section."""
    stamp = now_iso()
    fields: dict[str, Any] = {
        "review_round": 0,
        "crash_count": 0,
        "host": host_name(),
        "workspace": None,
        "tmux_session": None,
        "attention": None,
        "pr_url": None,
        "created_at": stamp,
        "updated_at": stamp,
        **given,
    }
    body = f"\n## Context\n\n{context.strip()}\n" if context and context.strip() else ""
    return Task(fields=ordered(fields), body=body)


def _unused_id(snap: Snapshot) -> str:
    while True:
        candidate = layout.new_task_id()
        if snap.read(layout.task_path(candidate)) is None:
            return candidate


def check_deletable(snap: Snapshot, task: Task, caller: Caller = HUMAN) -> None:
    """Only a task in a state its workflow ends in can be deleted, and only by a human
    (no agent deletes a task, not even its own: deleting is a human's housekeeping, and
    an agent's own task is not finished while it runs); raises otherwise."""
    if caller.kind == "agent":
        raise NotPermitted(
            f"{caller} may not delete tasks",
            hint=f"ask a human to run: orange task delete {task.id}",
        )
    if is_active(snap, task):
        ended = " or ".join(sorted(workflow_of(snap, task).terminal_states))
        raise InvalidInput(
            f"task {task.id} is {task.status}; only a {ended} task can be deleted",
            hint=f"cancel it first: orange task cancel {task.id}",
        )


def delete_task(store: TaskStore, task_id: str, *, caller: Caller = HUMAN) -> Task:
    """Delete a finished task for ``caller`` (checked again under the write lock)."""

    def compute(snap: Snapshot) -> Written:
        task = require(snap, task_id)
        check_deletable(snap, task, caller)
        return Written(
            task_id=task.id,
            event="task.deleted",
            subject=f"task {task.id}: deleted",
            writes={task.path: None},
            task=task,
        )

    return store.commit(compute).task


def check_own_branch(branch: str, base: str | None, default_branch: str) -> None:
    """Refuse a task ``branch`` that is the branch it merges into (its ``base``, else
    ``main``) or the project's default branch: its work would be merged into itself,
    and its worktree could not check it out.  The rule a push is held to too
    (`orange.engine.policy.own_branch_problem`)."""
    problem = own_branch_problem(branch, base, (default_branch,))
    if problem is not None:
        raise InvalidInput(f"branch {problem}", hint="give the task a branch of its own")


def initial_status(workflow: Workflow, status: str | None, summary: str) -> str:
    """The status a new task starts in: ``status`` if the workflow allows it, else the
    first initial status (or the empty-summary one when there is no summary)."""
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
