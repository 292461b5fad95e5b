"""One task's history, from the commits of the tasks ref, indexed incrementally.

The commits are the history (DESIGN §2).  Finding one task's commits means reading
every commit message, so the messages that name a task (``Orange-Task:``) are kept in a
small SQLite index in the common git dir, extended from the last indexed tip by the
commits added since; a ref moved backwards or rewritten (``update-ref``, a forced fetch)
rebuilds it.  Like the listing cache, a missing or corrupt index is rebuilt silently.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from orange.store import events

if TYPE_CHECKING:
    import pygit2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS commits (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, task TEXT NOT NULL,
    message TEXT NOT NULL, time INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS commits_task ON commits (task, seq);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

Row = tuple[str, str, int]  # commit id, message, commit time


def commits_of(db_path: Path, repo: pygit2.Repository, tip: str, task_id: str) -> list[Row]:
    """The commits naming ``task_id`` reachable from ``tip``, oldest first."""
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
    db.executescript(_SCHEMA)
    db.execute("BEGIN IMMEDIATE")
    try:
        row = db.execute("SELECT value FROM meta WHERE key='tip'").fetchone()
        indexed = row[0] if row else None
        if indexed != tip:
            _extend(db, repo, tip, indexed)
        rows = db.execute(
            "SELECT id, message, time FROM commits WHERE task=? ORDER BY seq", (task_id,)
        ).fetchall()
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return [(str(i), str(m), int(t)) for i, m, t in rows]


def _extend(db: sqlite3.Connection, repo: pygit2.Repository, tip: str, indexed: str | None) -> None:
    if indexed is not None and not _is_ancestor(repo, indexed, tip):
        db.execute("DELETE FROM commits")  # the ref moved back or was rewritten
        indexed = None
    db.executemany(
        "INSERT OR IGNORE INTO commits (id, task, message, time) VALUES (?, ?, ?, ?)",
        _new_commits(repo, tip, indexed),
    )
    db.execute("INSERT OR REPLACE INTO meta VALUES ('tip', ?)", (tip,))


def _is_ancestor(repo: pygit2.Repository, old: str, new: str) -> bool:
    try:
        return old == new or bool(repo.descendant_of(new, old))
    except Exception:  # an unknown object (gc'd after a rewrite): rebuild
        return False


def _new_commits(
    repo: pygit2.Repository, tip: str, indexed: str | None
) -> Iterator[tuple[str, str, str, int]]:
    """Commits after ``indexed`` up to ``tip``, parents first, that name a task."""

    modes = pygit2.enums.SortMode
    walker = repo.walk(tip, modes.TOPOLOGICAL | modes.REVERSE)
    if indexed is not None:
        walker.hide(indexed)
    for commit in walker:
        task = events.parse_trailers(commit.message).get("Orange-Task")
        if task:
            yield str(commit.id), task, commit.message, commit.commit_time
