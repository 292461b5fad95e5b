"""What the dashboard shows, read incrementally from the store's cache.

`Source.changed` is the cheap watch: one ref lookup per project (anyone's write moves
the ref: the CLI, an agent, the monitor, plain git, a fetch).  `Source.refresh` then
re-reads the cache's entries and rebuilds only the rows whose blob changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import pygit2

from orange.dashboard.rows import Row, build_row, make_row
from orange.engine import localqueue
from orange.engine.definitions import Definitions
from orange.engine.localqueue import Standing
from orange.engine.workflow import Workflow
from orange.errors import BrokenTaskFile, InvalidInput, OrangeError
from orange.home import host_name
from orange.projects import Project, load_all, open_store
from orange.runtime import settingup, waiting
from orange.runtime.bindings import session_of
from orange.runtime.places import agent_window
from orange.runtime.tmux import Tmux
from orange.runtime.watcher import read_status
from orange.store import cache, listing
from orange.store.branches import check_branch_name
from orange.store.layout import TASKS_REF
from orange.store.layout import task_dir as task_dir_of
from orange.store.store import Snapshot, TaskStore
from orange.store.task import UNREADABLE, unreadable
from orange.sync.divergence import sync_remote, sync_state


class Header(NamedTuple):
    project: str
    used: int
    pool: int
    monitor: str
    sync: str = ""  # where the projects that sync stand (`orange.sync.divergence`)


class _Feed:
    """One project's store, the tip last read, its rows by key and the tree id of each
    shard (``tasks/<xx>``) they were read from."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.store: TaskStore = open_store(project)
        self.tip = ""
        self.rows: dict[str, Row] = {}
        self.shards: dict[str, str] = {}
        self.known: Definitions | None = None
        # Where each task in its queue state stands on this host (`localqueue`), and
        # the look of the local records it was read with.
        self.standings: dict[str, Standing] = {}
        self.stamp: tuple[tuple[int, int], ...] = ()
        # The sync remote, looked up once (it runs git): None for a project without one.
        self.remote = sync_remote(project)

    def tip_now(self) -> str:
        try:
            ref = self.store.pygit.references.get(TASKS_REF)
        except Exception:  # a ref being rewritten: the next look sees it
            return self.tip
        return "" if ref is None else str(ref.target)

    def stamp_now(self) -> tuple[tuple[int, int], ...]:
        try:
            return localqueue.stamp(self.store)
        except OSError:  # the clone's private folder gone: the next look sees it
            return self.stamp

    def refresh(self, here: str) -> bool:
        tip, stamp = self.tip_now(), self.stamp_now()
        if tip == self.tip and self.known is not None:
            if stamp == self.stamp:
                return False
            self._stand(self.store.snapshot(), stamp)  # queued, parked by this host
            return True
        snap = self.store.snapshot()
        first = self.known is None
        self.known = Definitions(snap)
        trees = _shards(snap)
        shards = {name: str(tree.id) for name, tree in trees.items()}
        if first:  # everything, from the store's cache
            for entry in listing.entries(snap):
                if not entry.project or entry.project == self.project.name:
                    row = build_row(entry, self.project.name, self.known, here)
                    self.rows[row.key] = row
        else:  # only the shards whose tree changed, only the blobs that changed
            for shard in set(shards) | set(self.shards):
                if shards.get(shard) != self.shards.get(shard):
                    self._reread(snap, shard, trees.get(shard), here)
        # A shard with a row git could not read is read again at the next change,
        # whatever its tree: the damaged object may be repaired by then.
        for key, row in self.rows.items():
            if row.task is None and UNREADABLE in row.broken:
                shards[key.split("/", 2)[1]] = ""
        self.shards, self.tip = shards, tip
        self._stand(snap, stamp)
        return True

    def _stand(self, snap: Snapshot, stamp: tuple[tuple[int, int], ...]) -> None:
        """Where the rows' tasks stand in this host's queue (read from the rows' own
        fields; only a task in its queue state reads more, the tasks it waits for)."""
        tasks = [row.task for row in self.rows.values() if row.active and row.task is not None]
        try:
            self.standings = localqueue.standings(self.store, snap, self.project.name, tasks)
        except OrangeError:  # a dependency git cannot read now: the next change retries
            self.standings = {}
        self.stamp = stamp

    def _reread(self, snap: Snapshot, shard: str, tree: pygit2.Tree | None, here: str) -> None:
        prefix = f"{self.project.name}:tasks/{shard}/"
        old = {key: row for key, row in self.rows.items() if key.startswith(prefix)}
        for key in old:
            del self.rows[key]
        self.rows.pop(prefix[:-1], None)  # the shard's own broken row, if it had one
        try:
            blobs = _task_blobs(shard, tree)
        except pygit2.GitError as exc:  # the shard's own object damaged: one broken row
            assert self.known is not None
            reason = f"tasks/{shard}/TASK.md: {unreadable('its shard', exc)}"
            task_dir, project = f"tasks/{shard}", self.project.name
            broken = make_row(task_dir, "", None, reason, project, self.known, here)
            self.rows[broken.key] = broken
            return
        for name, blob in blobs:
            key = f"{prefix}{name}"
            row = old.get(key)
            if row is None or row.blob != blob or UNREADABLE in row.broken:
                row = self._row(snap, f"tasks/{shard}/{name}", blob, here)
            if row is not None:
                self.rows[key] = row

    def _row(self, snap: Snapshot, task_dir: str, blob: str, here: str) -> Row | None:
        assert self.known is not None
        name = task_dir.rsplit("/", 1)[-1]
        try:
            # Reading a task by its name reads the folder its name belongs in: a copy in
            # another folder is broken, as the store's cache says.
            if task_dir != task_dir_of(name):
                raise BrokenTaskFile(snap.misplaced_reason(task_dir, blob))
            task = snap.task(name)
            fields, error = (None, "no TASK.md") if task is None else (dict(task.fields), None)
        except OrangeError as exc:
            fields, error = None, exc.message
        if fields is not None and fields.get("project") not in (None, "", self.project.name):
            return None
        return make_row(task_dir, blob, fields, error, self.project.name, self.known, here)


def _subtree(snap: Snapshot, *names: str) -> pygit2.Tree | None:
    tree = snap.tree
    for name in names:
        if tree is None or name not in tree:
            return None
        child = tree / name
        tree = child if isinstance(child, pygit2.Tree) else None
    return tree


def _shards(snap: Snapshot) -> dict[str, pygit2.Tree]:
    """The shards of the tasks ref's ``tasks/`` folder, by name (as the store's cache
    names them: a name that is not UTF-8 has its bytes escaped)."""
    tasks = _subtree(snap, "tasks")
    if tasks is None:
        return {}
    shards: dict[str, pygit2.Tree] = {}
    for item in tasks:
        if isinstance(item, pygit2.Tree):
            shards.setdefault(cache.name_of(item), item)
    return shards


def _task_blobs(shard: str, tree: pygit2.Tree | None) -> list[tuple[str, str]]:
    """(task folder, TASK.md blob id) of each task in a shard's tree, by the store's
    cache's walk (`cache.shard_tasks`); "" for a folder without a TASK.md or one git
    cannot read (its row says why, `Snapshot.task`)."""
    if tree is None:
        return []
    return [
        (task_dir.rsplit("/", 1)[-1], "" if blob_id.startswith(cache.MISSING) else blob_id)
        for task_dir, blob_id, _ in cache.shard_tasks(shard, tree)
    ]


class Source:
    """The tasks of one project (or of several), and what this host knows of them."""

    def __init__(self, projects: list[Project], tmux: Tmux) -> None:
        self.feeds = [_Feed(project) for project in projects]
        self.here = host_name()
        self.tmux = tmux

    def changed(self) -> bool:
        """Whether any project's tasks ref, or this host's queue records, changed since
        the last `refresh` (cheap: a ref lookup and two file looks a project)."""
        return any(
            feed.tip_now() != feed.tip or feed.stamp_now() != feed.stamp for feed in self.feeds
        )

    def standing(self, row: Row) -> Standing | None:
        """Where ``row``'s task stands in this host's queue (None: not in its queue
        state, or not trusted here)."""
        feed = self.feed_of(row) if row.task is not None else None
        return None if feed is None else feed.standings.get(row.id)

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

    def has_branch(self, row: Row) -> bool:
        """Whether the task's branch exists in its project's repository (a lookup of one
        reference; the name comes from the ref, so it is checked before use)."""
        try:
            branch = check_branch_name(row.branch)
            refs = self.feed_of(row).store.pygit.references
            return refs.get(f"refs/heads/{branch}") is not None
        except (InvalidInput, pygit2.GitError, ValueError):
            return False

    def agents(self) -> dict[str, str]:
        """Agent state by row key, for active tasks this host runs (one tmux call),
        ``setting up`` for those whose worktree is being made ready here, and
        ``waiting: SCREEN`` for a live agent on a screen that waits for a person."""
        out = self._setting_up()
        waits = {feed.project.name: waiting.waiting(feed.project.name) for feed in self.feeds}
        panes: Mapping[tuple[str, str], tuple[bool, int | None]] = {
            (p.session, p.window): (p.dead, p.dead_status) for p in self.tmux.panes()
        }
        for row in self.rows():
            if not row.session or row.task is None or not row.active:
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
                screen = waits.get(row.key.split(":", 1)[0], {}).get(row.id)
                if screen and not dead:
                    out[row.key] = f"waiting: {screen}"
        return out

    def _setting_up(self) -> dict[str, str]:
        """Rows whose task's setup runs on this host now (one listing a project)."""
        out: dict[str, str] = {}
        for feed in self.feeds:
            busy = {mark.task for mark in settingup.live(feed.project.name) if not mark.ready}
            out.update((row.key, "setting up") for row in feed.rows.values() if row.id in busy)
        return out

    def pool_sizes(self) -> dict[str, int]:
        """Each project's pool size as the registry says now (`project update
        --pool-size` while the dashboard runs), else as it was when the feed was made."""
        try:
            now = {project.name: project.pool_size for project in load_all()}
        except OrangeError:
            now = {}
        return {f.project.name: now.get(f.project.name, f.project.pool_size) for f in self.feeds}

    def header(self) -> Header:
        names = ", ".join(feed.project.name for feed in self.feeds) or "no project"
        pool = sum(self.pool_sizes().values())
        used = sum(1 for row in self.rows() if row.bound and row.active)
        status = read_status()
        synced = [
            sync_state(feed.store, feed.remote) for feed in self.feeds if feed.remote is not None
        ]
        monitor = (
            "monitor running"
            if status.get("running")
            else "monitor stopped"  # by a person, until `orange monitor start`
            if status.get("stopped_at")
            else "monitor off"
        )
        return Header(names, used, pool, monitor, "; ".join(synced))
