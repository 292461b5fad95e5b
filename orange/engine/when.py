"""``when`` expressions: ``<field> <op> <number>`` over a task's frontmatter.

The language is deliberately tiny (seed 001): one comparison of a numeric frontmatter
field against an integer or decimal literal, e.g. ``review_round < 2``,
``crash_count >= -1`` or ``cost_usd < 20.50`` (the ledger's cost, issue 30).  A field
that is missing or not a number counts as 0, so ``crash_count`` defaults to 0 as seed
001 asks; numeric strings such as ``"1"`` or ``"4.25"`` count as their value.

Because every expression compares one field with one constant, whether a set of
expressions can both hold (`find_overlap`) or can all fail (`find_gap`) is decided
exactly by trying each field's critical points: a field compared with integers only is
a whole number, and every constant ``c`` gives ``c - 1``, ``c`` and ``c + 1``; a field
compared with a decimal is any number, and gets every constant, the midpoint of each
two neighbouring constants, and a value below and above them all; plus one very small
and one very large value.  A condition of ``None`` (a transition without ``when``)
always holds.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, NamedTuple

Number = int | Decimal

OPERATORS: Mapping[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}

_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?[0-9]{1,15}\.[0-9]{1,9}")
_TOKENS = re.compile(r"\s*(?P<field>\S+?)\s*(?P<op><=|>=|==|!=|=<|=>|<|>|=)\s*(?P<value>.*?)\s*")
_EXTREME = 10**12


class When(NamedTuple):  # not a dataclass: see `orange.engine.workflow`
    """A parsed ``when`` expression; ``text`` is the expression as written."""

    field: str
    op: str
    value: Number
    text: str

    def holds(self, fields: Mapping[str, object]) -> bool:
        """True if the comparison holds for these frontmatter ``fields``."""
        return OPERATORS[self.op](number_value(fields, self.field), self.value)

    def __str__(self) -> str:
        return f"{self.field} {self.op} {self.value}"


def parse_when(text: str) -> When:
    """Parse ``<field> <op> <number>``; raise ``ValueError`` saying what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError('empty expression (expected "<field> <op> <number>")')
    match = _TOKENS.fullmatch(text)
    if match is None:
        raise ValueError(
            f'"{text}" has no comparison operator (expected "<field> <op> <number>", '
            f"op one of {' '.join(OPERATORS)})"
        )
    name, op, value = match["field"], match["op"], match["value"]
    if op not in OPERATORS:
        raise ValueError(f'"{text}": unknown operator "{op}" (use one of {" ".join(OPERATORS)})')
    if not _FIELD.fullmatch(name):
        raise ValueError(f'"{text}": "{name}" is not a field name (letters, digits, _)')
    if _DECIMAL.fullmatch(value):
        return When(field=name, op=op, value=Decimal(value), text=text.strip())
    if not _INTEGER.fullmatch(value):
        raise ValueError(f'"{text}": "{value}" is not an integer or decimal literal')
    return When(field=name, op=op, value=int(value), text=text.strip())


def number_value(fields: Mapping[str, object], name: str) -> Number:
    """The number frontmatter field ``name`` holds (a decimal such as the ledger's
    ``cost_usd`` text included); missing or not a number is 0."""
    raw = fields.get(name)
    if isinstance(raw, Decimal):
        return raw
    if isinstance(raw, str) and _DECIMAL.fullmatch(raw.strip()):
        return Decimal(raw.strip())
    return field_value(fields, name)


def field_value(fields: Mapping[str, object], name: str) -> int:
    """The integer value of frontmatter field ``name``; missing or non-integer is 0."""
    raw = fields.get(name)
    if isinstance(raw, bool):
        return int(raw)
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str) and _INTEGER.fullmatch(raw.strip()):
        return int(raw.strip())
    return 0


def _holds(when: When | None, point: Mapping[str, object]) -> bool:
    return True if when is None else when.holds(point)


def _critical_points(whens: Iterable[When | None]) -> list[dict[str, Number]]:
    """Every combination of critical values of the fields the expressions mention."""
    constants: dict[str, set[Number]] = {}
    for when in whens:
        if when is not None:
            constants.setdefault(when.field, set()).add(when.value)
    values: dict[str, set[Number]] = {}
    for name, found in constants.items():
        if all(isinstance(c, int) for c in found):
            values[name] = {v for c in found for v in (c - 1, c, c + 1)}
        else:  # any number: the constants, the midpoints between them, and beyond
            ordered = sorted(Decimal(c) for c in found)
            middles = [(a + b) / 2 for a, b in itertools.pairwise(ordered)]
            values[name] = {*ordered, *middles, ordered[0] - 1, ordered[-1] + 1}
    names = sorted(values)
    # Values near the constants first, so a reported witness reads naturally.
    axes = [[*sorted(values[name]), -_EXTREME, _EXTREME] for name in names]
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*axes)]


def find_overlap(whens: Sequence[When | None]) -> tuple[int, int, dict[str, Number]] | None:
    """The first pair ``(i, j)`` of expressions that can both hold, with a witness.

    Returns ``None`` when the expressions are mutually exclusive.
    """
    points = _critical_points(whens)
    for i, j in itertools.combinations(range(len(whens)), 2):
        for point in points:
            if _holds(whens[i], point) and _holds(whens[j], point):
                return i, j, point
    return None


def find_gap(whens: Sequence[When | None]) -> dict[str, Number] | None:
    """A field assignment under which none of ``whens`` holds, or ``None`` if exhaustive."""
    for point in _critical_points(whens):
        if not any(_holds(when, point) for when in whens):
            return point
    return None


def overlapping(whens: Sequence[When | None]) -> bool:
    """True if at least two of ``whens`` can hold at the same time."""
    return find_overlap(whens) is not None


def exhaustive(whens: Sequence[When | None]) -> bool:
    """True if, whatever the field values, at least one of ``whens`` holds."""
    return find_gap(whens) is None


def describe_point(point: Mapping[str, Number]) -> str:
    """``review_round=2, crash_count=0`` — for error messages; ``always`` if empty."""
    return ", ".join(f"{name}={value}" for name, value in point.items()) or "always"
