"""What the dashboard shows, read incrementally from the store's cache.

`Source.changed` is the cheap watch: one ref lookup per project (anyone's write moves
the ref: the CLI, an agent, the monitor, plain git, a fetch).  `Source.refresh` then
re-reads the cache's entries and rebuilds only the rows whose blob changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from orange.dashboard.rows import Row, build_row
from orange.engine.definitions import Definitions
from orange.engine.workflow import Workflow
from orange.home import host_name
from orange.hooks.bindings import session_of
from orange.hooks.places import agent_window
from orange.hooks.tmux import Tmux
from orange.hooks.watcher import read_status
from orange.projects import Project, open_store
from orange.store.layout import TASKS_REF
from orange.store.store import TaskStore
from orange.store.task import Task


class Header(NamedTuple):
    project: str
    used: int
    pool: int
    monitor: str


class _Feed:
    """One project's store, the tip last read and its rows by key."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.store: TaskStore = open_store(project)
        self.tip = ""
        self.rows: dict[str, Row] = {}
        self.known: Definitions | None = None

    def tip_now(self) -> str:
        try:
            ref = self.store.pygit.references.get(TASKS_REF)
        except Exception:  # a ref being rewritten: the next look sees it
            return self.tip
        return "" if ref is None else str(ref.target)

    def refresh(self, here: str) -> bool:
        tip = self.tip_now()
        if tip == self.tip and self.known is not None:
            return False
        snap = self.store.snapshot()
        self.known = Definitions(snap)
        rows: dict[str, Row] = {}
        for entry in snap.entries():
            if entry.project and entry.project != self.project.name:
                continue
            key = f"{self.project.name}:{entry.task_dir}"
            old = self.rows.get(key)
            if old is None or old.blob != entry.blob:
                old = build_row(entry, self.project.name, self.known, here)
            rows[key] = old
        self.rows, self.tip = rows, tip
        return True


class Source:
    """The tasks of one project (or of several), and what this host knows of them."""

    def __init__(self, projects: list[Project], tmux: Tmux | None = None) -> None:
        self.feeds = [_Feed(project) for project in projects]
        self.here = host_name()
        self.tmux = tmux or Tmux()

    def changed(self) -> bool:
        """Whether any project's tasks ref moved since the last `refresh` (cheap)."""
        return any(feed.tip_now() != feed.tip for feed in self.feeds)

    def refresh(self) -> bool:
        """Re-read the projects whose ref moved; True when anything did."""
        moved = [feed.refresh(self.here) for feed in self.feeds]  # every feed, no short cut
        return any(moved)

    def rows(self) -> list[Row]:
        return [row for feed in self.feeds for row in feed.rows.values()]

    def row(self, key: str) -> Row | None:
        for feed in self.feeds:
            if key in feed.rows:
                return feed.rows[key]
        return None

    def feed_of(self, row: Row) -> _Feed:
        return next(f for f in self.feeds if f.project.name == row.key.split(":", 1)[0])

    def workflow(self, row: Row) -> Workflow | None:
        known = self.feed_of(row).known
        return None if known is None or row.task is None else known.of(row.task)

    def agents(self) -> dict[str, str]:
        """Agent state by row key, for active tasks this host runs (one tmux call)."""
        panes: Mapping[tuple[str, str], tuple[bool, int | None]] = {
            (p.session, p.window): (p.dead, p.dead_status) for p in self.tmux.panes()
        }
        out: dict[str, str] = {}
        for row in self.rows():
            if row.task is None or not row.active:
                continue
            session = session_of(row.task)
            if not session:
                continue
            workflow = self.workflow(row)
            state = workflow.states.get(row.status) if workflow is not None else None
            window = agent_window(row.task, state.agent if state is not None else "worker")
            pane = panes.get((session, window)) or panes.get((session, "worker"))
            if pane is None:
                out[row.key] = "no agent"
            else:
                dead, status = pane
                out[row.key] = "alive" if not dead else f"exited {status}" if status else "exited"
        return out

    def header(self) -> Header:
        names = ", ".join(feed.project.name for feed in self.feeds) or "no project"
        pool = sum(feed.project.pool_size for feed in self.feeds)
        used = sum(
            1
            for row in self.rows()
            if row.active and row.task is not None and _bound_here(row.task, self.here)
        )
        running = read_status().get("running")
        return Header(names, used, pool, "monitor running" if running else "monitor off")


def _bound_here(task: Task, here: str) -> bool:
    return bool(task.str_field("workspace")) and task.str_field("host") in ("", here)
