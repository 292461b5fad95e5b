"""What the hosts hold, from the ref, and which ones cannot be reached (from this
host's last contact with them): for `orange host list`, `task list` and the dashboard."""

from __future__ import annotations

from typing import Any, NamedTuple

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


def status_lines(project: Project) -> list[tuple[str, str]]:
    """Each registered host's name and one line on it for ``project``: unreachable
    since when, not set up for it, or its free worktrees (from the ref) and its agents
    (as its last check said)."""
    found = []
    for row in host_rows(project):
        pools = row["pools"]
        agents = ", ".join(row["agents"]) or "none reported"
        if row["unreachable_since"]:
            said = f"unreachable since {row['unreachable_since']}"
        elif not pools:
            said = f"not set up for {project.name} (`orange host add --project {project.name}`)"
        elif pools[0]["used"] >= pools[0]["size"]:
            said = f"pool full ({pools[0]['used']} of {pools[0]['size']} in use)"
        else:
            free, size = pools[0]["size"] - pools[0]["used"], pools[0]["size"]
            said = f"ready: {free} of {size} worktrees free; agents: {agents}"
        found.append((str(row["name"]), said))
    return found


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


class _Known(NamedTuple):
    unreachable: dict[str, str]  # reported host name -> since when
    served: frozenset[str]  # the projects a registered host serves


_seen: dict[str, tuple[float, _Known]] = {}  # registry path -> (mtime, what it said)


def _known() -> _Known:
    """What the registry says, read again only when its file changed (the dashboard
    asks on every drawing)."""
    file = roster.path()
    try:
        mtime = file.stat().st_mtime
    except OSError:
        return _Known({}, frozenset())
    cached = _seen.get(str(file))
    if cached is not None and cached[0] == mtime:
        return cached[1]
    try:
        hosts = roster.load_all()
    except OrangeError:
        return _Known({}, frozenset())
    found = _Known(
        {h.reports_as: h.unreachable_since for h in hosts if h.unreachable_since},
        frozenset(name for h in hosts for name, _there in h.projects),
    )
    _seen[str(file)] = (mtime, found)
    return found


def unreachable() -> dict[str, str]:
    """Reported host name -> since when this host could not reach it."""
    return _known().unreachable


def served(project: str) -> bool:
    """Whether a registered host serves ``project`` (it can run its tasks)."""
    return project in _known().served


def where(host: str) -> str:
    """What to show of a task bound to ``host`` (the ref's word, shown, never used)."""
    since = unreachable().get(host) if host else None
    return f"host unreachable since {since}" if since else ""
