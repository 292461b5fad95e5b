"""The budget's look at a running agent (issue 30): at most once a minute a task, the
usage its agent programs recorded so far, not yet committed, is added to the ledger's
total; past the task's budget the engine stops the agent (`Engine.enforce_budget`)."""

from __future__ import annotations

import time
from collections.abc import Callable

from orange.engine.engine import Engine
from orange.engine.ledger import BUDGET
from orange.errors import OrangeError
from orange.store.task import Task

EVERY = 60.0  # seconds between two looks at one task's spending
_looked: dict[str, float] = {}  # task id -> when its spending was last looked at


def look(engine: Callable[[], Engine], task: Task, now: float | None = None) -> str | None:
    """What was done about ``task``'s budget (None: nothing: no budget, looked at less
    than `EVERY` seconds ago, within budget)."""
    if not task.fields.get(BUDGET):
        return None
    now = time.monotonic() if now is None else now
    if now - _looked.get(task.id, -EVERY) < EVERY:
        return None
    _looked[task.id] = now
    try:
        stopped = engine().enforce_budget(task.id, live=True)
    except OrangeError as exc:
        return f"task {task.id}: budget not checked: {exc}"
    if stopped is None:
        return None
    return f"task {task.id}: stopped: {stopped.task.str_field('attention')}"
