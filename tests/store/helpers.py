from __future__ import annotations

from typing import Any

from orange.store import layout
from orange.store.events import Change
from orange.store.store import Snapshot, TaskStore
from orange.store.task import Task, ordered


def put_task(store: TaskStore, task_id: str, body: str = "", **fields: Any) -> str | None:
    """Write a task directly through the store (no engine)."""
    base = {
        "id": task_id,
        "project": "proj",
        "branch": f"b-{task_id}",
        "status": "pending",
        "summary": f"task {task_id}",
        "updated_at": "2026-01-01T00:00:00Z",
    }
    base.update(fields)
    task = Task(fields=ordered(base), body=body)

    def compute(snap: Snapshot) -> Change:
        return Change(
            task_id=task_id,
            event="task.created",
            subject=f"task {task_id}: created",
            writes={task.path: task.render().encode()},
        )

    return store.commit(compute).commit


def set_field(
    store: TaskStore, task_id: str, key: str, value: Any, subject: str = ""
) -> str | None:
    def compute(snap: Snapshot) -> Change:
        task = snap.task(task_id)
        assert task is not None
        new = task.with_fields(**{key: value})
        return Change(
            task_id=task_id,
            event="task.updated",
            subject=subject or f"task {task_id}: updated {key}",
            writes={layout.task_path(task_id): new.render().encode()},
            trailers=(("Orange-Fields", key),),
        )

    return store.commit(compute).commit
