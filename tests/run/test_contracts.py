"""The agents' JSON contracts: where the object is found, and what makes one malformed."""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orange.run import contracts
from orange.run.contracts import (
    Clarify,
    ContractError,
    Review,
    Subtask,
    find_json,
    parse_clarify,
    parse_plan,
    parse_review,
    parse_tests,
)


def plan_text(subtasks: list[Any], groups: Any) -> str:
    return json.dumps({"subtasks": subtasks, "parallel_groups": groups})


def st_(ident: str, title: str = "do it", description: str = "details") -> dict[str, Any]:
    return {"id": ident, "title": title, "description": description}


class Found(NamedTuple):
    id: str
    text: str
    expected: object


FOUND = [
    Found("whole", ' {"a": 1} \n', {"a": 1}),
    Found(
        "last-fence",
        'First:\n```json\n{"a": 1}\n```\nthen\n```JSON\n{"a": 2}\n```\n',
        {"a": 2},
    ),
    Found("fence-over-bare", 'see {"bare": 1}\n```json\n{"fenced": 1}\n```', {"fenced": 1}),
    Found(
        "last-bare",
        'I think {"a": {"b": 1}} but {"c": [1, {"d": 2}]} done {oops',
        {"c": [1, {"d": 2}]},
    ),
    Found("bare-after-broken", 'x {"a": } y {"ok": true} z', {"ok": True}),
]


@pytest.mark.parametrize("case", FOUND, ids=[c.id for c in FOUND])
def test_find_json_takes_the_answer_object(case: Found) -> None:
    assert find_json(case.text) == case.expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no json here", "no JSON object found"),
        ("[1, 2]", "a list, not an object"),
        ('```json\n{"a": \n```', "last ```json block is not valid JSON"),
        ("```json\n[1]\n```", "holds a list"),
    ],
    ids=["none", "list", "broken-fence", "fenced-list"],
)
def test_find_json_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ContractError, match=re.escape(message)):
        find_json(text)


def test_a_valid_plan_keeps_order_and_groups() -> None:
    plan = parse_plan(
        "Here is the plan:\n```json\n"
        + plan_text([st_("b"), st_("a", " Title ")], [["a"], ["b"]])
        + "\n```"
    )
    assert plan.subtasks == (Subtask("b", "do it", "details"), Subtask("a", "Title", "details"))
    assert plan.groups == (("a",), ("b",))


class Bad(NamedTuple):
    id: str
    subtasks: Any
    groups: Any
    message: str


BAD_PLANS = [
    Bad("empty", [], [], "no subtasks"),
    Bad("not-a-list", {"a": 1}, [["a"]], '"subtasks" must be a list'),
    Bad("unknown-id", [st_("a")], [["a", "z"]], 'names unknown subtask "z"'),
    Bad("repeated", [st_("a"), st_("b")], [["a"], ["b", "a"]], 'repeats subtask "a"'),
    Bad("left-out", [st_("a"), st_("b")], [["a"]], 'subtask "b" is in no parallel group'),
    Bad("duplicate-ids", [st_("a"), st_("a")], [["a"]], 'id "a" is used twice'),
    Bad("bad-id", [st_("a b")], [["a b"]], "must be 1 to 64 of"),
    Bad("long-id", [st_("x" * 65)], [["x" * 65]], "must be 1 to 64 of"),
    Bad("dot-id", [st_("..")], [[".."]], "not starting with a dot"),
    Bad("no-groups", [st_("a")], [], "no parallel groups"),
    Bad("empty-group", [st_("a")], [["a"], []], "group 2 must be a non-empty list"),
    Bad("group-of-numbers", [st_("a")], [[1]], "holds a number"),
    Bad("long-title", [st_("a", "t" * 201)], [["a"]], "201 characters, over 200"),
    Bad("two-line-title", [st_("a", "one\ntwo")], [["a"]], "one line"),
    Bad("empty-title", [st_("a", "  ")], [["a"]], "title is empty"),
    Bad("huge-description", [st_("a", "t", "é" * 10241)], [["a"]], "20482 bytes, over 20480"),
    Bad("missing-description", [{"id": "a", "title": "t"}], [["a"]], 'missing "description"'),
    Bad("subtask-not-object", ["a"], [["a"]], "subtask 1 must be an object"),
    Bad("too-many", [st_(f"s{n}") for n in range(101)], [[f"s{n}" for n in range(101)]], "101"),
]


@pytest.mark.parametrize("case", BAD_PLANS, ids=[c.id for c in BAD_PLANS])
def test_a_malformed_plan_is_refused_in_one_line(case: Bad) -> None:
    with pytest.raises(ContractError) as caught:
        parse_plan(plan_text(case.subtasks, case.groups))
    assert case.message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_id_the_plan_names_badly_stays_one_line_in_the_error() -> None:
    with pytest.raises(ContractError) as caught:
        parse_plan(plan_text([st_("a")], [["a", "evil\nline"]]))
    assert "\n" not in str(caught.value)


@given(
    ids=st.lists(
        st.from_regex(contracts.SUBTASK_ID, fullmatch=True), min_size=1, max_size=8, unique=True
    ),
    prose=st.text(alphabet=st.characters(blacklist_characters="{}`"), max_size=40),
    cut=st.integers(min_value=1, max_value=8),
)
def test_any_consistent_plan_in_prose_parses_back(ids: list[str], prose: str, cut: int) -> None:
    groups = [ids[:cut], ids[cut:]] if ids[cut:] else [ids]
    text = prose + plan_text([st_(i, f"title {i}") for i in ids], groups) + prose
    plan = parse_plan(text)
    assert [s.id for s in plan.subtasks] == ids
    assert [list(g) for g in plan.groups] == groups


def test_clarify_contract() -> None:
    assert parse_clarify('{"status": "ready", "message": "Add X."}') == Clarify("ready", "Add X.")
    assert parse_clarify('{"status": "questions", "message": "Which?"}').status == "questions"
    for text, message in [
        ('{"status": "done", "message": "m"}', '"status" must be "questions" or "ready"'),
        ('{"status": "ready"}', 'missing "message"'),
        ('{"status": "ready", "message": " "}', '"message" is empty'),
        ('{"status": 1, "message": "m"}', '"status" must be a string, not number'),
    ]:
        with pytest.raises(ContractError, match=message):
            parse_clarify(text)


def test_tests_and_review_contracts_want_real_booleans() -> None:
    assert parse_tests('{"passed": false, "output": "1 failed"}') == (False, "1 failed")
    assert parse_review('ok ```json\n{"approved": true, "feedback": ""}\n```') == Review(True, "")
    with pytest.raises(ContractError, match='"passed" must be true or false, not string'):
        parse_tests('{"passed": "yes", "output": ""}')
    with pytest.raises(ContractError, match='"approved" must be true or false, not number'):
        parse_review('{"approved": 1, "feedback": ""}')
    with pytest.raises(ContractError, match='"feedback" must be a string, not null'):
        parse_review('{"approved": false, "feedback": null}')
    with pytest.raises(ContractError, match="the review object is empty"):
        parse_review("{}")
