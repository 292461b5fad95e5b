"""One task's history, from the commits of the tasks ref, indexed incrementally.

The commits are the history (DESIGN §2), and every commit that changed a task's file
belongs to that task's history, whoever made it: Orange (its ``Orange-*`` trailers say
what happened) or a person with plain git in a tasks checkout (actor ``git``).  So the
tasks a commit changed are taken from its diff against its first parent, never from
its message.  Finding them means looking at every commit, so they are kept in a small
SQLite index in the common git dir, extended from the last indexed tip by the commits
added since; a ref moved backwards or rewritten (``update-ref``, a forced fetch)
rebuilds it.  Like the listing cache, a missing, corrupt or older-layout index is
rebuilt silently.  The diff costs little: the layout is sharded, and the walk
(`orange.store.treediff`) opens only the shard trees whose id changed.
"""

from __future__ import annotations

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
    db.execute("BEGIN IMMEDIATE")
    try:
        row = db.execute("SELECT value FROM meta WHERE key='tip'").fetchone()
        indexed = row[0] if row else None
        if indexed != tip:
            _extend(db, repo, tip, indexed)
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


def _row(
    task_id: str, commit: str, message: str, time: int, old: str | None, new: str | None
) -> Row:
    own = events.parse_trailers(message).get("Orange-Task") == task_id
    return Row(str(commit), str(message), int(time), own, old, new)


def _extend(db: sqlite3.Connection, repo: pygit2.Repository, tip: str, indexed: str | None) -> None:
    if indexed is not None and not _is_ancestor(repo, indexed, tip):
        db.execute("DELETE FROM commits")  # the ref moved back or was rewritten
        indexed = None
    db.executemany(
        "INSERT OR IGNORE INTO commits (id, task, message, time, from_status, to_status)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        _new_rows(repo, tip, indexed),
    )
    db.execute("INSERT OR REPLACE INTO meta VALUES ('tip', ?)", (tip,))


def _is_ancestor(repo: pygit2.Repository, old: str, new: str) -> bool:
    try:
        return old == new or bool(repo.descendant_of(new, old))
    except Exception:  # an unknown object (gc'd after a rewrite): rebuild
        return False


Indexed = tuple[str, str, str, int, str | None, str | None]


def _new_rows(repo: pygit2.Repository, tip: str, indexed: str | None) -> Iterator[Indexed]:
    """One row per (commit, task it changed) after ``indexed`` up to ``tip``, parents
    first."""
    modes = pygit2.enums.SortMode
    walker = repo.walk(tip, modes.TOPOLOGICAL | modes.REVERSE)
    if indexed is not None:
        walker.hide(indexed)
    listed = Listings(repo, missing_ok=True)
    roots: dict[bytes, bytes] = {}  # commit → its root tree: a parent was walked before
    for commit in walker:
        roots[commit.id.raw] = commit.tree_id.raw
        parents = commit.parent_ids
        parent = None
        if parents:
            parent = roots.get(parents[0].raw) or repo[parents[0]].peel(pygit2.Commit).tree_id.raw
        named = events.parse_trailers(commit.message).get("Orange-Task")
        for task, old, new in changed_tasks(parent, roots[commit.id.raw], listed):
            if task == named:  # Orange's record of it: the trailers say the rest
                yield str(commit.id), task, commit.message, commit.commit_time, None, None
            else:
                before = _status(repo, _task_file(listed, old))
                after = _status(repo, _task_file(listed, new))
                if before == after:  # an edit, not a move
                    before = after = None
                yield str(commit.id), task, commit.message, commit.commit_time, before, after


def changed_tasks(
    parent: bytes | None, tree: bytes, listed: Listings
) -> Iterator[tuple[str, bytes | None, bytes | None]]:
    """(task id, old folder tree, new folder tree) of each ``tasks/<shard>/<id>/`` that
    differs between root trees ``parent`` and ``tree``: only the shards whose tree id
    changed are opened (`orange.store.treediff`; a commit of Orange's changes one)."""
    old, new = _tasks_tree(listed, parent), _tasks_tree(listed, tree)
    for path, before, after in changes(listed, old, new, depth=2):
        task = path.rpartition(b"/")[2]
        yield task.decode("utf-8", "replace"), _id(before), _id(after)


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
