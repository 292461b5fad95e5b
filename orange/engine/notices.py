"""When a human is needed: the notices a written commit calls for (DESIGN §4).

The engine decides here, after each of its commits, whether a human must hear of it:
the task entered a state that waits for a human (``waits_for_human``), or its
``attention`` was set.  Sending is the runtime's (`orange.engine.ports.Notifier`,
handed in by the composition root); the commit id is the key that keeps one event
from notifying twice, whichever driver carried the move out.
"""

from __future__ import annotations

from orange.engine.ports import Notice, Notifier
from orange.engine.workflow import Workflow
from orange.store.task import Task


def notices(
    workflow: Workflow | None, before: Task | None, after: Task, commit: str
) -> list[Notice]:
    """The notices of the commit ``commit`` that turned ``before`` into ``after``
    (``before`` None: unknown, so only a set ``attention`` counts)."""
    found = []
    entered = before is not None and before.status != after.status
    if entered and workflow is not None and workflow.waits_for_human(after.status):
        reason = f"waits for a human in {after.status}"
        found.append(Notice("waiting", after, commit, reason))
    attention = after.str_field("attention")
    if attention and (before is None or before.str_field("attention") != attention):
        found.append(Notice("attention", after, commit, attention))
    return found


def announce(
    notifier: Notifier | None,
    workflow: Workflow | None,
    before: Task | None,
    after: Task,
    commit: str | None,
) -> None:
    """Hand the notices of ``commit`` to ``notifier`` (the engine's); never raises (telling
    a human is best effort: it must not fail a move that is already written)."""
    if notifier is None or commit is None:
        return
    for notice in notices(workflow, before, after, commit):
        try:
            notifier.send(notice)
        except Exception:  # any failure of the runtime's notifier: the move stands
            pass
