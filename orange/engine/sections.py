"""``orange task edit``: replace one section of a task's body, or the whole body."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orange.engine.caller import HUMAN, Caller
from orange.engine.edits import edit_body
from orange.engine.gates import set_section
from orange.store.store import TaskStore
from orange.store.task import Task

if TYPE_CHECKING:
    from orange.engine.ports import WorkingCopies


def edit_section(
    store: TaskStore,
    task_id: str,
    heading: str | None,
    text: str,
    copies: WorkingCopies | None = None,
    *,
    caller: Caller = HUMAN,
) -> Task:
    """Set the section under ``heading`` (``## Notes``) to ``text``, or with None the
    whole body, in one commit; the agent's working copy is taken in first and brought
    up to date after."""

    def new_body(task: Task) -> str:
        return text if heading is None else set_section(task.body, heading, text)

    updated = edit_body(
        store, task_id, new_body, what=heading or "body", copies=copies, caller=caller
    )
    if copies is not None:
        copies.after_write(updated)
    return updated
