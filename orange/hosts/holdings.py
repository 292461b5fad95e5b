"""What the hosts hold, from the ref, and which ones cannot be reached (from this
host's last contact with them): for `orange host list`, `task list` and the dashboard."""

from __future__ import annotations

from typing import Any

from orange import projects
from orange.engine.definitions import is_active
from orange.errors import OrangeError
from orange.hosts import roster
from orange.projects import Project, open_store
from orange.store.listing import all_tasks
from orange.store.task import Task


def host_rows(project: Project | None) -> list[dict[str, Any]]:
    """Each registered host with, per project it serves (``project`` only, when
    given), the worktrees in use there and the agents running, counted from the ref."""
    rows = []
    for host in roster.load_all():
        pools = []
        for here, _there in host.projects:
            if project is not None and here != project.name:
                continue
            running = _running(here, host.reports_as)
            pools.append(
                {
                    "project": here,
                    "size": host.pool_size(here),
                    "used": sum(running.values()),
                    "running": running,
                }
            )
        rows.append({**host.as_json(), "pools": pools})
    return rows


def _running(project_name: str, reported: str) -> dict[str, int]:
    """Harness name -> active tasks the ref shows bound to host ``reported``."""
    if not reported:
        return {}
    try:
        store = open_store(projects.get(project_name))
        snap = store.snapshot()
        counts: dict[str, int] = {}
        for task in all_tasks(store):
            if not isinstance(task, Task) or task.str_field("host") != reported:
                continue
            if task.str_field("workspace") and is_active(snap, task):
                name = task.str_field("harness") or "?"
                counts[name] = counts.get(name, 0) + 1
        return counts
    except OrangeError:
        return {}


_seen: dict[str, tuple[float, dict[str, str]]] = {}  # registry path -> (mtime, answer)


def unreachable() -> dict[str, str]:
    """Reported host name -> since when this host could not reach it (read again only
    when the registry file changed: the dashboard asks on every drawing)."""
    file = roster.path()
    try:
        mtime = file.stat().st_mtime
    except OSError:
        return {}
    cached = _seen.get(str(file))
    if cached is not None and cached[0] == mtime:
        return cached[1]
    try:
        hosts = roster.load_all()
    except OrangeError:
        return {}
    found = {h.reports_as: h.unreachable_since for h in hosts if h.unreachable_since}
    _seen[str(file)] = (mtime, found)
    return found


def where(host: str) -> str:
    """What to show of a task bound to ``host`` (the ref's word, shown, never used)."""
    since = unreachable().get(host) if host else None
    return f"host unreachable since {since}" if since else ""
