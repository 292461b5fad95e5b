"""The task value: ordered frontmatter plus a markdown body, and its broken twin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from orange.errors import BrokenTaskFile
from orange.store import taskfile
from orange.store.layout import task_path, valid_task_id

# Frontmatter keys in the order a new task writes them (DESIGN §3).  Keys a workflow
# or a human adds come after these and keep their own order.
FIELD_ORDER = (
    "id",
    "project",
    "branch",
    "workflow",
    "harness",
    "review_harness",
    "status",
    "review_round",
    "crash_count",
    "summary",
    "host",
    "workspace",
    "tmux_session",
    "attention",
    "pr_url",
    "created_at",
    "updated_at",
)

INT_FIELDS = frozenset({"review_round", "crash_count"})
STRING_FIELDS = frozenset(FIELD_ORDER) - INT_FIELDS


# Value types of the store are named tuples, not frozen dataclasses: a dataclass is
# built by generated code each process start (about half a millisecond each), which
# every `orange` command would pay before doing anything.
class Task(NamedTuple):
    """One TASK.md.  ``fields`` keeps key order; treat it as read-only."""

    fields: Mapping[str, Any]
    body: str
    blob_id: str = ""

    @classmethod
    def parse(cls, text: str, *, where: str, blob_id: str = "", exact: bool = False) -> Task:
        """``exact``: the values as written, a known text field written as a number or
        a list included (what the replay judges: `orange.engine.policy` refuses them);
        else such a field reads as its text (`check_fields`), as every reader wants."""
        data, body = taskfile.split(text, where=where)
        fields = checked_fields(data, where) if not exact else _with_id(data, where)
        return cls(fields=fields, body=body, blob_id=blob_id)

    def render(self) -> str:
        return taskfile.join(self.fields, self.body)

    # Typed views of the well-known fields.
    @property
    def id(self) -> str:
        return str(self.fields["id"])

    @property
    def path(self) -> str:
        return task_path(self.id)

    @property
    def status(self) -> str:
        return self.str_field("status")

    @property
    def project(self) -> str:
        return self.str_field("project")

    @property
    def branch(self) -> str:
        return self.str_field("branch")

    @property
    def summary(self) -> str:
        return self.str_field("summary")

    @property
    def workflow(self) -> str:
        return self.str_field("workflow") or "default"

    def str_field(self, name: str) -> str:
        value = self.fields.get(name)
        return "" if value is None else str(value)

    def int_field(self, name: str) -> int:
        value = self.fields.get(name)
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int):
            return value
        try:
            return int(str(value))
        except ValueError:
            return 0

    def with_fields(self, **changes: Any) -> Task:
        """A copy with ``changes`` applied; existing keys keep their position."""
        merged = dict(self.fields)
        merged.update(changes)
        return Task(fields=merged, body=self.body)

    def with_body(self, body: str) -> Task:
        return Task(fields=dict(self.fields), body=body)


# The reason of a task git cannot read from this clone's objects (a damaged or missing
# object): "<what> cannot be read: <git's error>", as the listing, a single task's read
# and the dashboard give it (the dashboard reads such a task's shard again).
UNREADABLE = " cannot be read: "


def unreadable(what: str, exc: Exception) -> str:
    """The reason for ``what`` (``TASK.md``, ``its folder``, ``its shard``) git could
    not read."""
    return f"{what}{UNREADABLE}{exc}"


class BrokenTask(NamedTuple):
    """A TASK.md in the ref that does not parse; listed, never hidden."""

    path: str
    error: str
    blob_id: str = ""
    id: str = ""


def checked_fields(data: dict[str, Any], where: str) -> dict[str, Any]:
    """A task's frontmatter: it has a valid id, and its known string fields are strings.
    Raises BrokenTaskFile."""
    check_fields(data, where)
    return data


def check_fields(data: dict[str, Any], where: str) -> bool:
    """`checked_fields` in place; whether it changed a value (a known string field
    written as a bare number or boolean).  Raises BrokenTaskFile."""
    return _normalise(_with_id(data, where))


def _with_id(data: dict[str, Any], where: str) -> dict[str, Any]:
    """``data``, which has a valid id.  Raises BrokenTaskFile."""
    task_id = data.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise BrokenTaskFile(f"{where}: frontmatter has no 'id'")
    if not valid_task_id(task_id):
        raise BrokenTaskFile(f"{where}: id {task_id!r} is not a valid task id")
    return data


def _normalise(data: dict[str, Any]) -> bool:
    """Known string fields read back as strings even when written as bare numbers;
    whether any was."""
    changed = False
    for key, value in data.items():
        if value is None or type(value) is str or key not in STRING_FIELDS:
            continue
        data[key] = "true" if value is True else "false" if value is False else str(value)
        changed = True
    return changed


def ordered(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Fields in canonical order first, then the others in their given order."""
    out = {key: fields[key] for key in FIELD_ORDER if key in fields}
    out.update((key, value) for key, value in fields.items() if key not in out)
    return out
