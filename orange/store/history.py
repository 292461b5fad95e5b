"""One task's history, from the commits of the tasks ref, indexed incrementally.

The commits are the history (DESIGN §2), and every commit that changed a task's file
belongs to that task's history, whoever made it: Orange (its ``Orange-*`` trailers say
what happened) or a person with plain git in a tasks checkout (actor ``git``).  So the
tasks a commit changed are taken from its diff against its first parent, never from
its message.  Finding them means looking at every commit, so they are kept in a small
SQLite index in the common git dir, extended from the last indexed tip by the commits
added since; a ref moved backwards or rewritten (``update-ref``, a forced fetch)
rebuilds it.  Like the listing cache, a missing, corrupt or older-layout index is
rebuilt silently.  The index is derived from the commits alone: nothing in it decides
anything but what ``task log`` and ``task show`` print, and it is keyed by the tip it
was built for, so a rewritten ref never reads rows of the history it replaced.

The diff costs little: the layout is sharded, and the walk (`orange.store.treediff`)
opens only the shard trees whose id changed.  Above the shards, where every commit
changes the ``tasks/`` tree (256 entries), `TasksTrees` compares the two raw trees as
bytes when both have the layout's one shape (each entry a tree named by two hex
digits), and leaves any other shape to the walk.  A long history (a fresh clone, a
rewritten ref) is indexed in slices of `SLICE` commits along the tip's first-parent
line, each slice in its own transaction and read through a repository of its own: a
build holds one slice's objects in memory, not the whole history's (libgit2 keeps what
it reads in a per-repository cache), and an interrupted build goes on from its last
slice instead of the root.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pygit2

from orange.store import events, layout
from orange.store.treediff import Entry, Listings, changes

if TYPE_CHECKING:
    from orange.store.store import TaskStore

# Bumped when the tables change: an index of another version is dropped and rebuilt.
_VERSION = 2
_SCHEMA = """
CREATE TABLE IF NOT EXISTS commits (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL, task TEXT NOT NULL,
    message TEXT NOT NULL, time INTEGER NOT NULL,
    from_status TEXT, to_status TEXT, UNIQUE (id, task)
);
CREATE INDEX IF NOT EXISTS commits_task ON commits (task, seq);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_TASKS = b"tasks"
SLICE = 5_000  # commits indexed per transaction and per libgit2 object cache


class HistoryEntry(NamedTuple):  # not a dataclass: see `orange.store.task.Task`
    commit: str
    event: str
    subject: str
    actor: str
    at: str
    from_status: str | None
    to_status: str | None
    trailers: dict[str, str]


_GIT = ("git.commit", "git")  # event and actor of a plain-git commit


def task_history(store: TaskStore, task_id: str) -> list[HistoryEntry]:
    """The commits about one task, oldest first, from the index (`commits_of`)."""
    ref = store.pygit.references.get(layout.TASKS_REF)
    if ref is None:
        return []
    db_path = store.repo.orange_dir() / "history.sqlite3"
    out: list[HistoryEntry] = []
    for row in commits_of(db_path, store.pygit, str(ref.target), task_id):
        trailers = events.parse_trailers(row.message) if row.own else {}
        # A commit that is not Orange's record of this task (a plain-git commit in a
        # tasks checkout): actor ``git``, its status change read from the file; a sync
        # merge (``Orange-Merge``) is the sync's.
        other = ("sync.merge", "sync") if "\nOrange-Merge: " in row.message else _GIT
        out.append(
            HistoryEntry(
                commit=row.commit,
                event=trailers.get("Orange-Event", "" if row.own else other[0]),
                subject=row.message.split("\n", 1)[0],
                actor=trailers.get("Orange-Actor", "" if row.own else other[1]),
                at=datetime.fromtimestamp(row.time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                from_status=trailers.get("Orange-From") if row.own else row.from_status,
                to_status=trailers.get("Orange-To") if row.own else row.to_status,
                trailers=trailers,
            )
        )
    return out


class Row(NamedTuple):
    """One commit that changed one task.  ``own``: the commit is Orange's record of this
    task (its ``Orange-Task`` trailer names it), so its trailers say what happened;
    otherwise ``from_status``/``to_status`` are read from the task's file before and
    after (None when the file is missing or unreadable)."""

    commit: str
    message: str
    time: int
    own: bool
    from_status: str | None
    to_status: str | None


def commits_of(db_path: Path, repo: pygit2.Repository, tip: str, task_id: str) -> list[Row]:
    """The commits changing ``task_id``'s file reachable from ``tip``, oldest first."""
    for _attempt in range(2):
        try:
            with closing(sqlite3.connect(db_path, timeout=10, isolation_level=None)) as db:
                return _query(db, repo, tip, task_id)
        except (sqlite3.DatabaseError, OSError):
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    with closing(sqlite3.connect(":memory:")) as db:
        return _query(db, repo, tip, task_id)


def _query(db: sqlite3.Connection, repo: pygit2.Repository, tip: str, task_id: str) -> list[Row]:
    if db.execute("PRAGMA user_version").fetchone()[0] != _VERSION:
        db.executescript("DROP TABLE IF EXISTS commits; DROP TABLE IF EXISTS meta;")
        db.execute(f"PRAGMA user_version = {_VERSION}")
    db.executescript(_SCHEMA)
    plan: list[str] = []  # the slices' last commits, oldest first
    while True:  # a slice a transaction; the answer read in the last one
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT value FROM meta WHERE key='tip'").fetchone()
            indexed = row[0] if row else None
            if indexed != tip:
                if indexed is not None and not _is_ancestor(repo, indexed, tip):
                    db.execute("DELETE FROM commits")  # the ref moved back or was rewritten
                    indexed = None
                if indexed not in plan:  # (None: a first build) planned here, or again
                    plan = _slices(repo, tip, indexed)
                upto = plan[plan.index(indexed) + 1] if indexed in plan else plan[0]
                _extend(db, repo, upto, indexed, apart=indexed is None or len(plan) > 2)
                if upto != tip:
                    db.execute("COMMIT")
                    continue
            rows = db.execute(
                "SELECT id, message, time, from_status, to_status FROM commits"
                " WHERE task=? ORDER BY seq",
                (task_id,),
            ).fetchall()
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return [_row(task_id, *values) for values in rows]


def _slices(repo: pygit2.Repository, tip: str, indexed: str | None) -> list[str]:
    """Where each slice of the commits from ``indexed`` to ``tip`` ends: every `SLICE`th
    commit of the tip's first-parent line, oldest first, then ``tip``; ``indexed`` (when
    on that line) first.  A slice is everything a commit reaches that the one before
    did not, so every slice's end is a tip the index is whole for."""
    own = pygit2.Repository(repo.path)  # what the walk reads is cached: not for long
    try:
        walker = own.walk(tip, pygit2.enums.SortMode.NONE)
        walker.simplify_first_parent()
        if indexed is not None:
            walker.hide(indexed)
        line = [str(commit.id) for commit in walker]
    finally:
        own.free()
    line.reverse()
    ends = line[SLICE - 1 :: SLICE]
    if not ends or ends[-1] != tip:
        ends.append(tip)
    return [indexed, *ends] if indexed is not None else ends


def _row(
    task_id: str, commit: str, message: str, time: int, old: str | None, new: str | None
) -> Row:
    own = events.parse_trailers(message).get("Orange-Task") == task_id
    return Row(str(commit), str(message), int(time), own, old, new)


def _extend(
    db: sqlite3.Connection,
    repo: pygit2.Repository,
    tip: str,
    indexed: str | None,
    *,
    apart: bool = True,
) -> None:
    """Index the commits ``tip`` reaches and ``indexed`` does not; ``apart``: read
    through a repository of their own (its object cache goes with it), for a slice of
    a long build, where the few commits of a usual extension are read through ``repo``
    (no second repository opened by every ``task show``)."""
    own = pygit2.Repository(repo.path) if apart else repo
    try:
        db.executemany(
            "INSERT OR IGNORE INTO commits (id, task, message, time, from_status, to_status)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            _new_rows(own, tip, indexed),
        )
    finally:
        if apart:
            own.free()
    db.execute("INSERT OR REPLACE INTO meta VALUES ('tip', ?)", (tip,))


def _is_ancestor(repo: pygit2.Repository, old: str, new: str) -> bool:
    try:
        return old == new or bool(repo.descendant_of(new, old))
    except Exception:  # an unknown object (gc'd after a rewrite): rebuild
        return False


Indexed = tuple[str, str, str, int, str | None, str | None]


def _new_rows(
    repo: pygit2.Repository, tip: str, indexed: str | None, *, shaped: bool = True
) -> Iterator[Indexed]:
    """One row per (commit, task it changed) after ``indexed`` up to ``tip``, parents
    first.  ``shaped``: compare ``tasks/`` trees of the layout's shape as bytes
    (`TasksTrees`; False: the walk alone, the reference the tests hold it to)."""
    modes = pygit2.enums.SortMode
    walker = repo.walk(tip, modes.TOPOLOGICAL | modes.REVERSE)
    if indexed is not None:
        walker.hide(indexed)
    # Each shard's last tree kept (256 of them): a commit's parent's shard is read once.
    listed = Listings(repo, missing_ok=True, keep=300)
    trees = TasksTrees(repo) if shaped else None
    roots: dict[bytes, bytes] = {}  # commit → its root tree: a parent was walked before
    for commit in walker:
        roots[commit.id.raw] = commit.tree_id.raw
        parents = commit.parent_ids
        parent = None
        if parents:
            parent = roots.get(parents[0].raw) or repo[parents[0]].peel(pygit2.Commit).tree_id.raw
        named = events.parse_trailers(commit.message).get("Orange-Task")
        for task, old, new in changed_tasks(parent, roots[commit.id.raw], listed, trees):
            if task == named:  # Orange's record of it: the trailers say the rest
                yield str(commit.id), task, commit.message, commit.commit_time, None, None
            else:
                before = _status(repo, _task_file(listed, old))
                after = _status(repo, _task_file(listed, new))
                if before == after:  # an edit, not a move
                    before = after = None
                yield str(commit.id), task, commit.message, commit.commit_time, before, after


def changed_tasks(
    parent: bytes | None, tree: bytes, listed: Listings, trees: TasksTrees | None = None
) -> Iterator[tuple[str, bytes | None, bytes | None]]:
    """(task id, old folder tree, new folder tree) of each ``tasks/<shard>/<id>/`` that
    differs between root trees ``parent`` and ``tree``: only the shards whose tree id
    changed are opened (`orange.store.treediff`; a commit of Orange's changes one), found
    by `TasksTrees` when given and both ``tasks/`` trees have the layout's shape."""
    old, new = _tasks_tree(listed, parent), _tasks_tree(listed, tree)
    shards = None
    if trees is not None and old is not None and new is not None and old != new:
        shards = trees.changed(old, new)
    if shards is None:
        found = changes(listed, old, new, depth=2)
    else:  # the same walk, one level down, into each changed shard in the tree's order
        found = (
            change
            for _, below, above in shards
            for change in changes(listed, below, above, depth=1)
        )
    for path, before, after in found:
        task = path.rpartition(b"/")[2]
        yield task.decode("utf-8", "replace"), _id(before), _id(after)


# The ``tasks/`` tree of the layout: entries of 29 bytes, "40000 <two hex digits>\0<id>".
_WIDTH = 29
_HEAD = 9  # mode, space, name, NUL: what a shard's change leaves as it was


class TasksTrees:
    """Raw ``tasks/`` trees of the layout's one shape, by raw tree id (a few, the last
    read), and which shard entries differ between two of them.

    A tree has the shape when it is whole entries of ``40000 <xx>\0<id>`` (``xx`` two
    lowercase hex digits) with its names strictly ascending (so none twice): its
    entries, as `orange.store.treediff.Listings` parses them, are exactly those.  A
    tree of the same length as one of the shape whose differing bytes all lie in the
    ids of its entries has the shape too, and its changed shards are those entries:
    found by halving the byte ranges that differ (``memcmp``), not by parsing 256
    entries a commit.  Anything else (a tree that is unreadable, of another length or
    shape, a name or mode changed) answers None: the caller walks it."""

    def __init__(self, repo: pygit2.Repository, keep: int = 8) -> None:
        self.odb = repo.odb
        self.keep = keep
        self.known: dict[bytes, bytes] = {}

    def changed(self, old: bytes, new: bytes) -> list[tuple[bytes, bytes, bytes]] | None:
        """(shard name, old shard tree, new shard tree) of each differing entry, in the
        trees' order; None when either tree lacks the shape."""
        before = self._shaped(old)
        after = None if before is None else self._raw(new)
        if before is None or after is None or len(after) != len(before):
            return None
        found: list[tuple[bytes, bytes, bytes]] = []
        for start in _differing(before, after, len(before) // _WIDTH):
            at = start * _WIDTH
            if before[at : at + _HEAD] != after[at : at + _HEAD]:
                return None  # a name or a mode changed: not a change of one shard's id
            cut = at + _HEAD
            found.append(
                (before[at + 6 : at + 8], before[cut : at + _WIDTH], after[cut : at + _WIDTH])
            )
        self._remember(new, after)
        return found

    def _shaped(self, tree: bytes) -> bytes | None:
        raw = self.known.get(tree)
        if raw is None:
            raw = self._raw(tree)
            if raw is None or not _has_shape(raw):
                return None
            self._remember(tree, raw)
        return raw

    def _raw(self, tree: bytes) -> bytes | None:
        try:
            kind, raw = self.odb.read(tree.hex())
        except (KeyError, pygit2.GitError):
            return None
        return raw if kind == pygit2.enums.ObjectType.TREE else None

    def _remember(self, tree: bytes, raw: bytes) -> None:
        if tree not in self.known and len(self.known) >= self.keep:
            del self.known[next(iter(self.known))]
        self.known[tree] = raw


def _has_shape(raw: bytes) -> bool:
    if len(raw) % _WIDTH or not re.fullmatch(rb"(?:40000 [0-9a-f]{2}\0[\s\S]{20})*", raw):
        return False
    names = [raw[at + 6 : at + 8] for at in range(0, len(raw), _WIDTH)]
    return names == sorted(set(names))  # ascending, none twice


def _differing(old: bytes, new: bytes, count: int) -> list[int]:
    """The entries (by number, ascending) whose bytes differ between two trees of
    ``count`` entries: the first found by halving the range after the last found."""
    # The first and the last differing byte at once, from the two trees as integers
    # (C loops over the bytes, where slicing would copy the tree a dozen times).
    diff = int.from_bytes(old, "little") ^ int.from_bytes(new, "little")
    if not diff:
        return []
    first, last = ((diff & -diff).bit_length() - 1) // 8, (diff.bit_length() - 1) // 8
    if first // _WIDTH == last // _WIDTH:
        return [first // _WIDTH]  # one entry: a commit of Orange's
    found: list[int] = []
    first = 0
    while first < count and old[first * _WIDTH :] != new[first * _WIDTH :]:
        low, high = first, count  # entries first .. low are equal; one in low .. high is not
        while high - low > 1:
            middle = (low + high) // 2
            if old[low * _WIDTH : middle * _WIDTH] == new[low * _WIDTH : middle * _WIDTH]:
                low = middle
            else:
                high = middle
        found.append(low)
        first = low + 1
    return found


def _tasks_tree(listed: Listings, root: bytes | None) -> bytes | None:
    return _id(listed.of(root).get(_TASKS))


def _id(entry: Entry | None) -> bytes | None:
    return None if entry is None else entry[2]


def _task_file(listed: Listings, folder: bytes | None) -> str | None:
    """The id of the TASK.md blob in a task's folder tree (None: none)."""
    found = _id(listed.of(folder).get(b"TASK.md"))
    return None if found is None else found.hex()


def _status(repo: pygit2.Repository, blob_id: str | None) -> str | None:
    """The ``status:`` line of a TASK.md's frontmatter (no full parse: a plain-git
    file may be anything; None when absent)."""
    if blob_id is None:
        return None
    try:
        text = repo[blob_id].read_raw()[:65536].decode("utf-8")
    except (KeyError, ValueError, AttributeError, pygit2.GitError):  # GitError: damaged
        return None
    if not text.startswith("---\n"):
        return None
    for line in text[4:].split("\n---", 1)[0].splitlines():
        if line.startswith("status:"):
            value = line[len("status:") :].strip().strip("'\"")
            return value or None
    return None
