"""The sync merge's rules come from the one field policy: what the engine owns follows
the status, what the host owns is one binding."""

from __future__ import annotations

from typing import Any

from orange.engine.merging import rules_for
from orange.store.task import Task
from orange.store.taskmerge import Side, merge_task

PATH = "tasks/00/t1/TASK.md"


def task(**fields: Any) -> bytes:
    values: dict[str, Any] = {
        "id": "t1",
        "workflow": "default",
        "status": "working",
        "summary": "do it",
        "crash_count": 0,
        "tokens": {"in": 10, "out": 5, "cache": 0},
        "cost_usd": "0.10",
        "updated_at": "2026-01-01T00:00:00.000Z",
    }
    values.update(fields)
    return Task(fields=values, body="## Context\n\nx\n").render().encode()


def test_the_ledger_totals_come_with_the_status_they_were_recorded_with() -> None:
    base = task()
    # Both sides moved the task, each recording the agent's usage with its move.  Ours
    # ended it (an ended status wins the merge); theirs is the later commit.  The totals
    # must be those of the side whose status wins, not of the later commit: a mix that no
    # chain of commits adds up to.
    ours = task(status="cancelled", tokens={"in": 30, "out": 9, "cache": 1}, cost_usd="0.30")
    theirs = task(status="agent-review", tokens={"in": 20, "out": 7, "cache": 0}, cost_usd="0.20")
    rules = rules_for(())._replace(terminal=lambda t: t.status == "cancelled")
    merged = merge_task(base, ours, theirs, (Side("a" * 40, 100), Side("b" * 40, 200)), rules, PATH)
    assert merged.data is not None
    result = Task.parse(merged.data.decode(), where=PATH)
    assert result.status == "cancelled"
    assert (result.fields["tokens"], result.fields["cost_usd"]) == (
        {"in": 30, "out": 9, "cache": 1},
        "0.30",
    )
