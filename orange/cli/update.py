"""``orange task update``: the command agents run most, so it loads only what it uses.

A new summary or branch needs the store, the task file and the agent's working copy;
a status change needs the engine (`orange.cli.engine`), which only that path loads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from orange import compose
from orange.cli.context import locate
from orange.cli.output import emit_json, task_object
from orange.engine.edits import update_fields
from orange.errors import InvalidInput, NotPermitted

if TYPE_CHECKING:
    from orange.cli.context import TaskRef
    from orange.store.store import Snapshot
    from orange.store.task import Task


def update_task(
    *,
    task: str | None,
    summary: str | None,
    status: str | None,
    branch: str | None,
    project: str | None,
    json_out: bool,
    offline: bool = False,
    after: list[str] | None = None,
    no_after: bool = False,
    budget: str | None = None,
) -> None:
    """``task update``: a move (--status), or a new summary / branch / dependencies /
    budget."""
    ref = locate(task, project)
    if status is not None:
        if summary is not None or branch is not None or after is not None or no_after or budget:
            raise InvalidInput(
                "--status cannot be combined with other changes", hint="run two commands"
            )
        # The engine, its workflows and hook actions: loaded for a move only.
        from orange.cli.engine import move_task

        move_task(ref, status, json_out, offline=offline)
        return
    changes: dict[str, object] = {}
    if summary is not None:
        changes["summary"] = summary
    check = None
    if after is not None or no_after:
        if compose.process_caller().kind == "agent":
            raise NotPermitted("an agent may not change a task's dependencies (--after)")
        changes["after"], check = _dependencies(ref, after, no_after)
    if budget is not None:
        if compose.process_caller().kind == "agent":
            raise NotPermitted("an agent may not change a task's budget")
        from orange.engine.ledger import BUDGET, budget_text  # Decimal: for a budget only

        # `off` takes the budget off, as `project update --budget off` does.
        changes[BUDGET] = None if budget.strip() == "off" else budget_text(budget)
    if not changes and branch is None:
        raise InvalidInput(
            "nothing to update", hint="pass --summary, --branch, --after, --budget or --status"
        )
    caller = compose.process_caller()
    updated = ref.store.get(ref.task_id)
    # No engine is built for a new summary (the agents' hottest path).
    copies = compose.copies()  # the one every engine of this process is handed
    if changes:
        updated = update_fields(
            ref.store, ref.task_id, changes, copies=copies, caller=caller, check=check
        )
    if branch is not None:
        # Renaming a live branch drives git and tmux: loaded for --branch only.
        from orange.ops.rename import rename_branch

        changes["branch"] = branch
        updated = rename_branch(
            ref.store, copies, updated, branch or None, tmux=compose.tmux(), caller=caller
        )
    copies.after_write(updated)
    if json_out:
        emit_json(task_object(updated))
    else:
        print(f"updated task {updated.id}: {', '.join(changes)}")


def _dependencies(
    ref: TaskRef, after: list[str] | None, no_after: bool
) -> tuple[list[str] | None, Callable[[Snapshot, Task], None]]:
    """``after`` as full ids (None with ``--no-after``) and the check, made again on the
    tip the change is written on, that they name tasks and close no cycle."""
    if after is not None and no_after:
        raise InvalidInput("--after and --no-after cannot be combined")
    if after is None:
        return None, lambda snap, task: None
    # The dependency rules (definitions, workflows): loaded for --after only.
    from orange.engine import dependencies

    ids = dependencies.resolve(ref.store, ref.store.snapshot(), after, project=ref.project.name)
    return ids, lambda snap, task: dependencies.checked(snap, task.id, ids)
