"""``after:`` in the field policy: a list of distinct task ids, or nothing."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from orange.engine.dependencies import forest
from orange.engine.policy import field_problem
from orange.store.task import Task


class Case(NamedTuple):
    id: str
    value: Any
    problem: str | None


CASES = [
    Case("one id", ["abcd1234"], None),
    Case("two ids", ["abcd1234", "efgh5678"], None),
    Case("a string", "abcd1234", "after must be a list of task ids"),
    Case("a path", ["../x"], "after must be a list of task ids"),
    Case("a number", [1], "after must be a list of task ids"),
    Case("twice", ["abcd1234", "abcd1234"], "after names a task twice"),
    Case("too many", [f"t{n:07d}" for n in range(65)], "after names more than 64 tasks"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_field_policy_checks_after(case: Case) -> None:
    before = {"id": "abcd0000", "summary": "x"}
    assert field_problem(before, {**before, "after": case.value}, ()) == case.problem


def _task(task_id: str, created: str, *after: str) -> Task:
    fields: dict[str, Any] = {"id": task_id, "created_at": created}
    return Task(fields={**fields, "after": list(after)} if after else fields, body="")


def test_the_forest_puts_each_task_under_what_it_waits_for_and_a_cycle_still_shows() -> None:
    tasks = [
        _task("t0000003", "2026-01-03", "t0000001", "t0000002"),
        _task("t0000001", "2026-01-01"),
        _task("t0000002", "2026-01-02"),
        _task("t0000005", "2026-01-05", "t0000006"),  # a pushed cycle: no root reaches it
        _task("t0000006", "2026-01-06", "t0000005"),
    ]
    drawn = [(p.lead(), p.task.id, p.again) for p in forest(tasks)]
    assert drawn == [
        ("", "t0000001", False),
        ("└─ ", "t0000003", False),
        ("", "t0000002", False),
        ("└─ ", "t0000003", True),
        ("", "t0000005", False),
        ("└─ ", "t0000006", False),
        ("  └─ ", "t0000005", True),
    ]


def test_a_chain_thousands_of_tasks_deep_is_drawn() -> None:
    chain = [_task(f"t{n:07d}", f"2026-01-01T{n:07d}", *([f"t{n - 1:07d}"] if n else []))
             for n in range(5000)]  # fmt: skip
    places = forest(chain)
    assert [p.depth for p in places] == list(range(5000))
