"""``after:`` in the field policy: a list of distinct task ids, or nothing."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from orange.engine.policy import field_problem


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
