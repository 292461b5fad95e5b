"""The dashboard's rows: one value per task, built from the store's cache entries.

Pure: no Textual, no tmux.  A row is rebuilt only when its TASK.md blob changed (a
blob id never changes meaning), so a refresh after one change costs one parse.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from operator import attrgetter
from typing import Any, NamedTuple

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
    rank: tuple[bool, bool, str, str] = (False, False, "", "")  # `order` sorts on it
    session: str = ""  # the tmux session the ref names, when bound on this host
    bound: bool = False  # holds a workspace on this host (the ref says so)


def build_row(entry: Entry, project: str, known: Definitions, here: str) -> Row:
    """The row of one cache entry of ``project``'s tasks ref."""
    return make_row(entry.task_dir, entry.blob, entry.fields, entry.error, project, known, here)


def make_row(
    task_dir: str,
    blob: str,
    fields: dict[str, Any] | None,
    error: str | None,
    project: str,
    known: Definitions,
    here: str,
) -> Row:
    """The row of the task in ``task_dir`` (``fields`` None: broken, for ``error``)."""
    key = f"{project}:{task_dir}"
    name = task_dir.rsplit("/", 1)[-1]
    if fields is None:
        reason = error or "unreadable"
        return Row(key, name, project, "", "broken", True, True, 0, reason, 0, "~", "", "",
                   reason, blob, None, (True, True, "~", key))  # fmt: skip
    task = Task(fields=fields, body="", blob_id=blob)
    workflow = known.of(task)
    host = task.str_field("host")
    here_too = host in ("", here)
    bound_elsewhere = bool(not here_too and task.str_field("workspace"))
    active = workflow is None or not workflow.is_terminal(task.status)
    activity = task.str_field("updated_at") or task.str_field("created_at")
    return Row(
        key=key,
        id=task.id,
        project=task.project or project,
        branch=task.branch,
        status=task.status,
        active=active,
        waits=workflow is not None and workflow.waits_for_human(task.status),
        review_round=_int(fields.get("review_round")),
        attention=task.str_field("attention"),
        crash_count=_int(fields.get("crash_count")),
        activity=activity,
        host=host if bound_elsewhere else "",
        summary=task.summary,
        broken="",
        blob=blob,
        task=task,
        rank=(False, active, activity, key),
        session=task.str_field("tmux_session") if here_too else "",
        bound=here_too and bool(task.str_field("workspace")),
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def order(rows: Iterable[Row]) -> list[Row]:
    """Broken first (someone should look), then active, each newest activity first."""
    return sorted(rows, key=_RANK, reverse=True)


_RANK = attrgetter("rank")


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
