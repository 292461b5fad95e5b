"""The dashboard's rows: one value per task, built from the store's cache entries.

Pure: no Textual, no tmux.  A row is rebuilt only when its TASK.md blob changed (a
blob id never changes meaning), so a refresh after one change costs one parse.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import NamedTuple

from orange.engine.definitions import Definitions
from orange.store.cache import Entry
from orange.store.task import Task

VIEWS = ("active", "all", "done")  # what `f` cycles through, in order


class Row(NamedTuple):  # not a dataclass: 10,000 of them are built at start-up
    """What the table shows of one task (``broken``: why its TASK.md does not parse)."""

    key: str  # <project>:<task dir>, unique across projects
    id: str
    project: str
    branch: str
    status: str
    active: bool
    waits: bool
    review_round: int
    attention: str
    crash_count: int
    activity: str
    host: str  # the host it is bound on, when not this one
    summary: str
    broken: str
    blob: str
    task: Task | None


def build_row(entry: Entry, project: str, known: Definitions, here: str) -> Row:
    """The row of one cache entry of ``project``'s tasks ref."""
    key = f"{project}:{entry.task_dir}"
    fields = entry.fields
    name = entry.task_dir.rsplit("/", 1)[-1]
    if fields is None:
        reason = entry.error or "unreadable"
        return Row(key, name, project, "", "broken", True, True, 0, reason, 0, "~", "", "",
                   reason, entry.blob, None)  # fmt: skip
    task = Task(fields=fields, body="", blob_id=entry.blob)
    workflow = known.of(task)
    host = task.str_field("host")
    bound_elsewhere = bool(host and host != here and task.str_field("workspace"))
    return Row(
        key=key,
        id=task.id,
        project=task.project or project,
        branch=task.branch,
        status=task.status,
        active=workflow is None or not workflow.is_terminal(task.status),
        waits=workflow is not None and workflow.waits_for_human(task.status),
        review_round=_int(fields.get("review_round")),
        attention=task.str_field("attention"),
        crash_count=_int(fields.get("crash_count")),
        activity=task.str_field("updated_at") or task.str_field("created_at"),
        host=host if bound_elsewhere else "",
        summary=task.summary,
        broken="",
        blob=entry.blob,
        task=task,
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def order(rows: Iterable[Row]) -> list[Row]:
    """Broken first (someone should look), then active, each newest activity first."""
    return sorted(rows, key=lambda r: (bool(r.broken), r.active, r.activity, r.key), reverse=True)


def shown(rows: Iterable[Row], view: str, text: str) -> list[Row]:
    """The rows of ``view`` (`VIEWS`) whose id, branch or summary holds ``text``."""
    needle = text.strip().lower()
    out = []
    for row in rows:
        if view == "active" and not row.active:
            continue
        if view == "done" and row.active:
            continue
        if needle and not any(needle in part.lower() for part in (row.id, row.branch, row.summary)):
            continue
        out.append(row)
    return out


def ago(stamp: str, now: datetime) -> str:
    """``3m ago`` for an ISO time stamp ('' when there is none or it does not parse)."""
    try:
        then = datetime.fromisoformat(stamp)
    except ValueError:
        return ""
    if then.tzinfo is None or now.tzinfo is None:
        then, now = then.replace(tzinfo=None), now.replace(tzinfo=None)
    seconds = max(0, int((now - then).total_seconds()))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def agent_state(row: Row, panes: Mapping[str, tuple[bool, int | None]], session: str) -> str:
    """``alive``, ``exited N`` or ``-``: the worker window's pane, when this host runs
    the task's session (``panes``: session -> (dead, exit status))."""
    if row.broken or not session or session not in panes:
        return "-"
    dead, status = panes[session]
    if not dead:
        return "alive"
    return "exited" if status is None else f"exited {status}"
