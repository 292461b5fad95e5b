"""Taking a task over from a host that is gone (``orange task take``, DESIGN §7).

A human move: the task, bound on another host, is bound to this one in one commit —
a worktree here (``acquire_workspace``) and, if its state has an agent to restart, that
agent (the state's respawn) — and claimed like any new binding (`orange.engine.claims`).
The old host, at its next sync, finds the task bound elsewhere and stops its agent,
saving its work first (`orange.sync.effects`).  The checker accepts such a commit as a
take (`orange.engine.steps`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from orange.engine.decide import Outcome, take_specs
from orange.engine.definitions import is_active
from orange.engine.elsewhere import running_elsewhere
from orange.errors import InvalidInput, NotPermitted
from orange.store.task import Task

if TYPE_CHECKING:
    from orange.engine.engine import Engine


def bound_elsewhere(engine: Engine, task: Task, here: str) -> str:
    """The host ``task`` is bound to, or `InvalidInput` when that is not another host."""
    snap = engine.store.snapshot()
    host = running_elsewhere(task, active=is_active(snap, task), here=here)
    if host is None:
        raise InvalidInput(
            f"task {task.id} is not bound to another host; nothing to take",
            hint=f"start it with `orange task spawn {task.id}`",
        )
    return host


def take(engine: Engine, task_id: str, here: str, options: Mapping[str, Any]) -> Outcome:
    """Bind ``task_id``, bound on another host, to ``here`` (a human's move)."""
    if engine.caller.kind != "human":
        raise NotPermitted(f"{engine.caller} may not take a task over; a human does")
    task = engine.store.get(task_id)
    bound_elsewhere(engine, task, here)
    specs = take_specs(engine.workflow(task), task.status)
    return engine.run_actions(task.id, specs, "task.taken", options)
