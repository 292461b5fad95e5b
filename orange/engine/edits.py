"""Changing a task without moving it: plain fields and the body.

None of these touches ``status`` or another engine-owned field (`orange.engine.fields`),
and each takes the agent's working copy in first when it is handed one, so every write
from any side keeps the other side's words (DESIGN §3).  Each is done for a ``caller``
(`orange.engine.caller`; the CLI passes who its process is): an agent edits only its
own task.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from orange.engine.caller import HUMAN, Caller
from orange.engine.fields import ENGINE_FIELDS
from orange.engine.policy import POLICY
from orange.engine.records import Written, require, unchanged
from orange.errors import InvalidInput
from orange.store.branches import check_branch_name
from orange.store.store import Snapshot, TaskStore, now_iso
from orange.store.task import Task

if TYPE_CHECKING:
    from orange.engine.ports import WorkingCopies


# The attention a body conflict sets (DESIGN §3), here and in `Engine._flag_conflict`.
BODY_CONFLICT = (
    "TASK.md changed in the worktree and in Orange at once; both versions are "
    "kept between conflict markers: resolve them and `orange task ack`"
)


def update_fields(
    store: TaskStore,
    task_id: str,
    changes: dict[str, Any],
    copies: WorkingCopies | None = None,
    *,
    caller: Caller = HUMAN,
    check: Callable[[Snapshot, Task], None] | None = None,
) -> Task:
    """Set plain frontmatter fields (summary, branch, ...), one ``task.updated`` commit;
    a field changed to None is taken off (a budget taken off with ``--budget off``).
    ``check`` runs on the tip the change is made on (a new branch's uniqueness,
    `orange.store.listing.check_branch_unique`: only a rename loads the listing)."""
    caller.check_own(task_id, "edit")
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
    for name, value in changes.items():  # what the replay would refuse is refused here
        spec = POLICY.get(name)
        problem = spec.check(value) if spec is not None else None
        if problem is not None:
            raise InvalidInput(f"{name} {problem}")
    taken_off = {name for name, value in changes.items() if value is None}

    def mutate(snap: Snapshot, task: Task) -> Task | None:
        if check is not None:
            check(snap, task)
        if all(task.fields.get(key) == value for key, value in changes.items()):
            return None
        merged = task.with_fields(**changes).fields
        fields = {k: v for k, v in merged.items() if k not in taken_off}
        return Task(fields=fields, body=task.body)

    return _write(
        store, task_id, mutate, event="task.updated", what=", ".join(changes), copies=copies
    )


def edit_body(
    store: TaskStore,
    task_id: str,
    new_body: Callable[[Task], str],
    what: str,
    copies: WorkingCopies | None = None,
    *,
    caller: Caller = HUMAN,
) -> Task:
    """Replace the body (or a section of it, via ``new_body``), one commit."""
    caller.check_own(task_id, "edit")

    def mutate(snap: Snapshot, task: Task) -> Task | None:
        body = new_body(task)
        return None if body == task.body else task.with_body(body)

    return _write(
        store, task_id, mutate, event="task.updated", what=what, field_names="body", copies=copies
    )


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

    def compute(snap: Snapshot) -> Written:
        task = require(snap, task_id)
        names = field_names or what
        merged = copies.take_in(task) if copies is not None else None
        if merged is not None and merged[0] != task.body:
            task = task.with_body(merged[0])
            names += ", body"
        if merged is not None and merged[1]:  # both versions kept: a human resolves them
            task = task.with_fields(attention=BODY_CONFLICT)
            names += ", attention"
        changed = mutate(snap, task)
        if changed is None:
            return unchanged(task)
        changed = changed.with_fields(updated_at=now_iso())
        return Written(
            task_id=task.id,
            event=event,
            subject=f"task {task.id}: updated {what}",
            writes={task.path: changed.render().encode()},
            trailers=(("Orange-Fields", names),),
            task=changed,
        )

    return store.commit(compute).task
