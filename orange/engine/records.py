"""What a write of one task hands back: the change and the task after it.

`orange.store.TaskStore.commit` returns what its compute function returned; these are
the engine's compute results for a single task (the status moves extend `Written`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Required, Unpack

from orange.errors import NotFound
from orange.store.events import Change, ChangeArgs
from orange.store.store import Snapshot, now_iso
from orange.store.task import Task

if TYPE_CHECKING:
    from orange.engine.workflow import HookSpec, Workflow


def require(snap: Snapshot, task_id: str) -> Task:
    """The task ``task_id`` in ``snap``, or `NotFound`."""
    task = snap.task(task_id)
    if task is None:
        raise NotFound(f"no task {task_id!r}", hint="see `orange task list --all`")
    return task


class Written(Change):
    """A change to one task, and the task as it is after it (a plain class: see
    `Change`)."""

    __slots__ = ("task",)

    def __init__(self, *, task: Task, **change: Unpack[ChangeArgs]) -> None:
        super().__init__(**change)
        self.task = task


class WrittenArgs(ChangeArgs, total=False):
    """`Written`'s arguments, for the engine's records that extend it."""

    task: Required[Task]


def unchanged(task: Task) -> Written:
    """Nothing to write: the task stays as it is."""
    return Written(task_id=task.id, event="", subject="", writes={}, task=task)


def fields_change(
    task: Task, fields: Mapping[str, object], event: str, what: str, actor: str | None
) -> Written:
    """One commit setting plain fields of ``task`` (no status change), or nothing when
    they already hold those values."""
    if all(task.fields.get(k) == v for k, v in fields.items()):
        return unchanged(task)
    new = task.with_fields(**fields, updated_at=now_iso())
    return Written(
        task_id=task.id,
        event=event,
        subject=f"task {task.id}: {what}",
        writes={task.path: new.render().encode()},
        trailers=(("Orange-Fields", ", ".join(fields)),),
        actor=actor,
        task=new,
    )


class Acted(Written):
    """A commit that runs hook actions: what they need to take effect afterwards (a
    plain class: see `orange.store.events.Change`).  ``untrusted``: a human's cancel
    of a task whose definition is untrusted."""

    __slots__ = ("before", "hooks", "messages", "untrusted", "workflow")

    def __init__(
        self,
        *,
        before: Task,
        workflow: Workflow,
        hooks: tuple[HookSpec, ...],
        messages: tuple[str, ...] = (),
        untrusted: bool = False,
        **written: Unpack[WrittenArgs],
    ) -> None:
        super().__init__(**written)
        self.before, self.workflow, self.hooks = before, workflow, hooks
        self.messages, self.untrusted = messages, untrusted
