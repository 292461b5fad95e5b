"""The answers an architect or SWE agent owes a run, parsed at the edge (no I/O).

An agent's answer is free text that must carry one JSON object (`find_json` says where
it may sit).  Each contract is checked strictly: a wrong type, a missing key or a plan
that does not hang together is a `ContractError` whose one-line message is sent back to
the agent on its one retry, so it says what was wrong in terms the agent can act on.
Unknown keys are ignored (agents add commentary fields).  Everything here is data from
an agent: it never decides what runs, and its sizes are bounded.

    clarify  {"status": "questions" | "ready", "message": "..."}
    plan     {"subtasks": [{"id", "title", "description"}], "parallel_groups": [[id]]}
    tests    {"passed": bool, "output": "..."}
    review   {"approved": bool, "feedback": "..."}
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple


class ContractError(ValueError):
    """An answer that does not meet its contract; ``str(e)`` is one line."""


class Clarify(NamedTuple):
    status: str  # "questions" | "ready"
    message: str


class Subtask(NamedTuple):
    id: str
    title: str
    description: str


class Plan(NamedTuple):
    subtasks: tuple[Subtask, ...]  # in the plan's order (a subtask's position names its branch)
    groups: tuple[tuple[str, ...], ...]  # run one after another; ids within one at once


class TestReport(NamedTuple):
    passed: bool
    output: str


class Review(NamedTuple):
    approved: bool
    feedback: str


SUBTASK_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")  # no leading dot: a file name
MAX_SUBTASKS = 100
MAX_TITLE = 200  # characters
MAX_DESCRIPTION = 20 * 1024  # bytes of UTF-8
CLARIFY_STATUSES = ("questions", "ready")

_FENCED = re.compile(r"```json[ \t]*\r?\n(.*?)```", re.DOTALL | re.IGNORECASE)
_DECODER = json.JSONDecoder()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def find_json(text: str) -> object:
    """The answer's JSON object: the whole text when it is one, else the last ```json
    fenced block (which must parse), else the last balanced ``{...}`` that parses."""
    stripped = text.strip()
    try:
        whole = json.loads(stripped)
    except ValueError:
        pass
    else:
        if isinstance(whole, dict):
            return whole
        raise ContractError(f"the answer is JSON but a {_kind(whole)}, not an object")
    fenced = _FENCED.findall(text)
    if fenced:
        try:
            found = json.loads(fenced[-1])
        except ValueError as exc:
            raise ContractError(f"the last ```json block is not valid JSON: {exc}") from None
        if not isinstance(found, dict):
            raise ContractError(f"the last ```json block holds a {_kind(found)}, not an object")
        return found
    last = _last_object(text)
    if last is None:
        raise ContractError("no JSON object found in the answer")
    return last


def _last_object(text: str) -> dict[str, Any] | None:
    """The last top-level ``{...}`` in ``text`` that parses as a JSON object."""
    found: dict[str, Any] | None = None
    start = text.find("{")
    while start != -1:
        try:
            value, end = _DECODER.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found = value
        start = text.find("{", end)
    return found


def _kind(value: object) -> str:
    names = {list: "list", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _object(text: str, what: str) -> dict[str, Any]:
    found = find_json(text)
    assert isinstance(found, dict)  # find_json returns objects only
    if not found:
        raise ContractError(f"the {what} object is empty")
    return found


def _field(data: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in data:
        raise ContractError(f'{where}: missing "{key}"')
    value = data[key]
    if not isinstance(value, kind):  # (a bool is no str or list, and 1 is no bool)
        name = {str: "a string", bool: "true or false", list: "a list"}[kind]
        raise ContractError(f'{where}: "{key}" must be {name}, not {_kind(value)}')
    return value


def parse_clarify(text: str) -> Clarify:
    data = _object(text, "clarification")
    status = _field(data, "status", str, "clarification")
    if status not in CLARIFY_STATUSES:
        raise ContractError(
            f'clarification: "status" must be "questions" or "ready", not "{_one_line(status)}"'
        )
    message = _field(data, "message", str, "clarification")
    if not message.strip():
        raise ContractError('clarification: "message" is empty')
    return Clarify(status, message)


def parse_tests(text: str) -> TestReport:
    data = _object(text, "tests")
    return TestReport(_field(data, "passed", bool, "tests"), _field(data, "output", str, "tests"))


def parse_review(text: str) -> Review:
    data = _object(text, "review")
    return Review(_field(data, "approved", bool, "review"), _field(data, "feedback", str, "review"))


def parse_plan(text: str) -> Plan:
    data = _object(text, "plan")
    raw = _field(data, "subtasks", list, "plan")
    if not raw:
        raise ContractError("plan: no subtasks")
    if len(raw) > MAX_SUBTASKS:
        raise ContractError(f"plan: {len(raw)} subtasks, more than {MAX_SUBTASKS}")
    subtasks = tuple(_subtask(entry, n) for n, entry in enumerate(raw, 1))
    ids = [s.id for s in subtasks]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ContractError(f'plan: subtask id "{twice[0]}" is used twice')
    groups = _groups(data, set(ids))
    placed = [i for group in groups for i in group]
    left_out = [i for i in ids if i not in placed]
    if left_out:
        raise ContractError(f'plan: subtask "{left_out[0]}" is in no parallel group')
    return Plan(subtasks, groups)


def _subtask(entry: object, n: int) -> Subtask:
    where = f"plan: subtask {n}"
    if not isinstance(entry, dict):
        raise ContractError(f"{where} must be an object, not {_kind(entry)}")
    ident = _field(entry, "id", str, where)
    if not SUBTASK_ID.fullmatch(ident):
        raise ContractError(
            f'{where}: id "{_one_line(ident)[:70]}" must be 1 to 64 of A-Z a-z 0-9 . _ - '
            "(not starting with a dot)"
        )
    where = f'plan: subtask "{ident}"'
    title = _field(entry, "title", str, where)
    if not title.strip():
        raise ContractError(f"{where}: the title is empty")
    if len(title) > MAX_TITLE:
        raise ContractError(f"{where}: the title is {len(title)} characters, over {MAX_TITLE}")
    if any(ord(c) < 32 or ord(c) == 127 for c in title):
        raise ContractError(f"{where}: the title must be one line without control characters")
    description = _field(entry, "description", str, where)
    size = len(description.encode("utf-8", "surrogatepass"))
    if size > MAX_DESCRIPTION:
        raise ContractError(f"{where}: the description is {size} bytes, over {MAX_DESCRIPTION}")
    return Subtask(ident, title.strip(), description)


def _groups(data: dict[str, Any], known: set[str]) -> tuple[tuple[str, ...], ...]:
    raw = _field(data, "parallel_groups", list, "plan")
    if not raw:
        raise ContractError("plan: no parallel groups")
    groups: list[tuple[str, ...]] = []
    seen: set[str] = set()
    for n, group in enumerate(raw, 1):
        where = f"plan: parallel group {n}"
        if not isinstance(group, list) or not group:
            raise ContractError(f"{where} must be a non-empty list of subtask ids")
        for ident in group:
            if not isinstance(ident, str):
                raise ContractError(f"{where} holds a {_kind(ident)}, not a subtask id")
            if ident not in known:
                raise ContractError(f'{where} names unknown subtask "{_one_line(ident)[:70]}"')
            if ident in seen:
                raise ContractError(f'{where} repeats subtask "{ident}"')
            seen.add(ident)
        groups.append(tuple(group))
    return tuple(groups)
