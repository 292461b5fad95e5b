"""`when` expressions: parsing, evaluation, and the exact overlap/exhaustiveness checks."""

from __future__ import annotations

from decimal import Decimal
from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orange.engine.when import (
    When,
    exhaustive,
    field_value,
    find_gap,
    find_overlap,
    overlapping,
    parse_when,
)


class Parsed(NamedTuple):
    text: str
    field: str
    op: str
    value: int | Decimal


PARSED = [
    Parsed("review_round < 2", "review_round", "<", 2),
    Parsed("crash_count>=-1", "crash_count", ">=", -1),
    Parsed("  x == 0  ", "x", "==", 0),
    Parsed("_n != 10", "_n", "!=", 10),
    Parsed("a <= 3", "a", "<=", 3),
    Parsed("a > -20", "a", ">", -20),
    Parsed("cost_usd < 20.50", "cost_usd", "<", Decimal("20.50")),
]


@pytest.mark.parametrize("case", PARSED, ids=[c.text.strip() for c in PARSED])
def test_parse_valid(case: Parsed) -> None:
    when = parse_when(case.text)
    assert (when.field, when.op, when.value) == (case.field, case.op, case.value)
    assert when.text == case.text.strip()


class Bad(NamedTuple):
    text: str
    reason: str


BAD = [
    Bad("", "empty expression"),
    Bad("review_round", "no comparison operator"),
    Bad("review_round = 2", 'unknown operator "="'),
    Bad("review_round =< 2", 'unknown operator "=<"'),
    Bad("1 < 2", "is not a field name"),
    Bad("review-round < 2", "is not a field name"),
    Bad("review_round < two", '"two" is not an integer or decimal literal'),
    Bad("cost_usd < 2.", '"2." is not an integer or decimal literal'),
    Bad("cost_usd < 1e3", '"1e3" is not an integer or decimal literal'),
    Bad("review_round < 2 and x > 1", "is not an integer or decimal literal"),
]


@pytest.mark.parametrize("case", BAD, ids=[c.text or "empty" for c in BAD])
def test_parse_invalid_says_why(case: Bad) -> None:
    with pytest.raises(ValueError) as info:
        parse_when(case.text)
    assert case.reason in str(info.value)


class Holds(NamedTuple):
    name: str
    expr: str
    fields: dict[str, object]
    expected: bool


HOLDS = [
    Holds("int below", "review_round < 2", {"review_round": 1}, True),
    Holds("int at bound", "review_round < 2", {"review_round": 2}, False),
    Holds("missing counts as 0", "crash_count == 0", {}, True),
    Holds("None counts as 0", "crash_count == 0", {"crash_count": None}, True),
    Holds("numeric string", "review_round >= 2", {"review_round": "2"}, True),
    Holds("negative string", "x < 0", {"x": " -3 "}, True),
    Holds("non-numeric string is 0", "x == 0", {"x": "many"}, True),
    Holds("list is 0", "x != 0", {"x": [1]}, False),
    Holds("negative literal", "x > -1", {"x": 0}, True),
    Holds("ledger cost below", "cost_usd < 20", {"cost_usd": "19.999999"}, True),
    Holds("ledger cost at", "cost_usd < 20.00", {"cost_usd": "20.000000"}, False),
    Holds("decimal literal", "cost_usd >= 0.5", {"cost_usd": "0.75"}, True),
    Holds("no cost is 0", "cost_usd < 0.01", {}, True),
]


@pytest.mark.parametrize("case", HOLDS, ids=[c.name for c in HOLDS])
def test_holds(case: Holds) -> None:
    assert parse_when(case.expr).holds(case.fields) is case.expected


def test_field_value_whole_float_is_int() -> None:
    assert field_value({"n": 2.0}, "n") == 2
    assert field_value({"n": 2.5}, "n") == 0


def w(text: str | None) -> When | None:
    return None if text is None else parse_when(text)


class Set(NamedTuple):
    name: str
    exprs: list[str | None]
    overlapping: bool
    exhaustive: bool


SETS = [
    Set("split at 2", ["review_round < 2", "review_round >= 2"], False, True),
    Set("gap at 2", ["review_round < 2", "review_round > 2"], False, False),
    Set("touch at 2", ["review_round <= 2", "review_round >= 2"], True, True),
    Set("eq and ne", ["x == 1", "x != 1"], False, True),
    Set("adjacent integers", ["x <= 1", "x >= 2"], False, True),
    Set("single always", [None], False, True),
    Set("always and a guard", [None, "x < 1"], True, True),
    Set("two always", [None, None], True, True),
    Set("empty", [], False, False),
    Set("two fields", ["a < 1", "b < 1"], True, False),
    Set("negative bound", ["x < -5", "x >= -5"], False, True),
    Set("decimal split", ["c < 20.5", "c >= 20.5"], False, True),
    Set("decimals overlap between", ["c < 20.5", "c > 20.4"], True, True),
    Set("decimal gap between", ["c <= 1.5", "c >= 2"], False, False),
    Set("decimal gap at", ["c < 1.5", "c > 1.5"], False, False),
]


@pytest.mark.parametrize("case", SETS, ids=[c.name for c in SETS])
def test_overlapping_and_exhaustive(case: Set) -> None:
    whens = [w(e) for e in case.exprs]
    assert overlapping(whens) is case.overlapping
    assert exhaustive(whens) is case.exhaustive


def test_witnesses_name_the_failing_point() -> None:
    assert find_gap([w("review_round < 2"), w("review_round > 2")]) == {"review_round": 2}
    overlap = find_overlap([w("x <= 2"), w("x == 5"), w("x >= 2")])
    assert overlap == (0, 2, {"x": 2})
    assert find_overlap([w("x < 0"), w("x > 0")]) is None


_EXPR = st.builds(
    lambda field, op, value: parse_when(f"{field} {op} {value}"),
    st.sampled_from(["a", "b"]),
    st.sampled_from(["<", ">", "<=", ">=", "==", "!="]),
    st.integers(min_value=-5, max_value=5),
)


@given(st.lists(st.one_of(st.none(), _EXPR), max_size=4))
def test_critical_points_agree_with_brute_force(whens: list[When | None]) -> None:
    grid = [{"a": a, "b": b} for a in range(-8, 9) for b in range(-8, 9)]
    counts = [sum(w is None or w.holds(point) for w in whens) for point in grid]
    assert overlapping(whens) is any(count >= 2 for count in counts)
    assert exhaustive(whens) is all(count >= 1 for count in counts)


_DECIMAL_EXPR = st.builds(
    lambda op, value: parse_when(f"c {op} {value / 2:.1f}"),
    st.sampled_from(["<", ">", "<=", ">=", "==", "!="]),
    st.integers(min_value=-6, max_value=6),
)


@given(st.lists(st.one_of(st.none(), _DECIMAL_EXPR), max_size=4))
def test_decimal_critical_points_agree_with_brute_force(whens: list[When | None]) -> None:
    grid = [{"c": Decimal(n) / 4} for n in range(-30, 31)]  # quarters: between any halves
    counts = [sum(w is None or w.holds(point) for w in whens) for point in grid]
    assert overlapping(whens) is any(count >= 2 for count in counts)
    assert exhaustive(whens) is all(count >= 1 for count in counts)
