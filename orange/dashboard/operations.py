"""The dashboard's operations: every one through the same engine and ops as the CLI.

Each returns the line to show; a refused one raises `OrangeError` (one line, shown in
the app) and changes nothing.
"""

from __future__ import annotations

from orange import compose
from orange.compose import build_engine, process_caller
from orange.engine import requests
from orange.engine.decide import Outcome
from orange.engine.engine import Engine
from orange.engine.tasks import delete_task
from orange.errors import InvalidInput
from orange.ops.create import Harnesses, create_and_spawn
from orange.ops.merge import merge_task
from orange.projects import Project
from orange.runtime.bindings import session_of
from orange.store.store import TaskStore


class Actions:
    """The moves of one project's tasks, as a human at the dashboard."""

    def __init__(self, project: Project, store: TaskStore) -> None:
        self.project = project
        self.store = store

    def engine(self) -> Engine:
        return build_engine(self.project, actor="cli", store=self.store)

    def merge(self, task_id: str) -> str:
        task = self.store.get(task_id)
        engine = self.engine()
        merged = merge_task(
            engine, self.project, task, strategy=None, local=False, force=False, gh=compose.gh()
        )
        return said(merged)

    def cancel(self, task_id: str) -> str:
        return said(requests.cancel(self.engine(), task_id))

    def request_changes(self, task_id: str, message: str) -> str:
        if not message.strip():
            raise InvalidInput("no feedback given: nothing was sent")
        return said(requests.request_changes(self.engine(), task_id, message))

    def ack(self, task_id: str) -> str:
        return f"task {self.engine().ack(task_id).id}: attention cleared"

    def delete(self, task_id: str) -> str:
        deleted = delete_task(self.store, task_id, caller=process_caller())
        return f"deleted task {deleted.id} (its history stays in refs/orange/tasks)"

    def spawn(self, task_id: str) -> str:
        return said(self.engine().spawn(task_id, options={"explicit": True}))

    def respawn(self, task_id: str) -> str:
        return said(self.engine().respawn(task_id))

    def session(self, task_id: str) -> str:
        """The task's tmux session on this host, or a one-line refusal."""
        session = session_of(self.store.get(task_id))
        if not session:
            raise InvalidInput(f"task {task_id} has no running tmux session on this host")
        return session

    def pr(self, task_id: str) -> str:
        task = self.store.get(task_id)
        url = task.str_field("pr_url")
        if url:
            return f"task {task.id}: {url}"
        url = compose.gh().create_pr(self.project, task)
        self.engine().set_fields(task.id, {"pr_url": url}, "task.updated", "pr_url")
        return f"task {task.id}: opened {url}"

    def create(self, *, branch: str, summary: str, harness: str, status: str, context: str) -> str:
        launch = create_and_spawn(
            self.engine(),
            summary=summary,
            branch=branch or None,
            context=context or None,
            status=status or None,
            agents=Harnesses(harness),
        )
        task = launch.created
        line = f"created task {task.id} [{task.status}] on branch {task.branch}"
        if launch.queued:
            return f"{line}; queued: {launch.queued}"
        if launch.error:
            return f"{line}, but it did not start: {launch.error}"
        return line


def said(outcome: Outcome) -> str:
    """One line for a move: ``task ID: from -> to``, and the first hook failure."""
    line = f"task {outcome.task.id}: {outcome.from_status} -> {outcome.to_status}"
    if outcome.from_status == outcome.to_status:
        line = f"task {outcome.task.id}: started its agent"
    if outcome.hook_errors:
        line += f" (needs attention: {outcome.hook_errors[0]})"
    return line
