"""One task's history, from the commits of the tasks ref, indexed incrementally.

The commits are the history (DESIGN §2), and every commit that changed a task's file
belongs to that task's history, whoever made it: Orange (its ``Orange-*`` trailers say
what happened) or a person with plain git in a tasks checkout (actor ``git``).  So the
tasks a commit changed are taken from its diff against its first parent, never from
its message.  Finding them means looking at every commit, so they are kept in a small
SQLite index in the common git dir, extended from the last indexed tip by the commits
added since; a ref moved backwards or rewritten (``update-ref``, a forced fetch)
rebuilds it.  Like the listing cache, a missing, corrupt or older-layout index is
rebuilt silently.  The diff costs little: the layout is sharded, so a commit's diff
opens only the shard trees whose id changed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import NamedTuple

import pygit2

from orange.store import events

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
_TASKS = "tasks"


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
    for commit in walker:
        parent = commit.parents[0].tree if commit.parents else None
        named = events.parse_trailers(commit.message).get("Orange-Task")
        for task, old, new in _changed_tasks(parent, commit.tree):
            if task == named:  # Orange's record of it: the trailers say the rest
                yield str(commit.id), task, commit.message, commit.commit_time, None, None
            else:
                before, after = _status(repo, old), _status(repo, new)
                if before == after:  # an edit, not a move
                    before = after = None
                yield str(commit.id), task, commit.message, commit.commit_time, before, after


def _changed_tasks(
    parent: pygit2.Tree | None, tree: pygit2.Tree
) -> Iterator[tuple[str, str | None, str | None]]:
    """(task id, old blob id, new blob id) of each ``tasks/<shard>/<id>/TASK.md`` that
    differs between ``parent`` and ``tree``."""
    old = _subtree(parent)
    new = _subtree(tree)
    if new is None:
        if old is None:
            return
        diff = old.diff_to_tree(swap=True)  # every task removed: old → empty
    elif old is None:
        diff = new.diff_to_tree(swap=True)
    elif old.id == new.id:
        return
    else:
        diff = old.diff_to_tree(new)
    seen: set[str] = set()
    for delta in diff.deltas:
        for path in {delta.old_file.path, delta.new_file.path}:
            parts = path.split("/")
            if len(parts) != 3 or parts[2] != "TASK.md" or parts[1] in seen:
                continue
            seen.add(parts[1])
            yield parts[1], _blob(delta.old_file), _blob(delta.new_file)


def _subtree(tree: pygit2.Tree | None) -> pygit2.Tree | None:
    if tree is None or _TASKS not in tree:
        return None
    entry = tree[_TASKS]
    return entry if isinstance(entry, pygit2.Tree) else None


def _blob(side: pygit2.DiffFile) -> str | None:
    return None if side.id.raw == b"\0" * 20 else str(side.id)


def _status(repo: pygit2.Repository, blob_id: str | None) -> str | None:
    """The ``status:`` line of a TASK.md's frontmatter (no full parse: a plain-git
    file may be anything; None when absent)."""
    if blob_id is None:
        return None
    try:
        text = repo[blob_id].read_raw()[:65536].decode("utf-8")
    except (KeyError, ValueError, AttributeError):
        return None
    if not text.startswith("---\n"):
        return None
    for line in text[4:].split("\n---", 1)[0].splitlines():
        if line.startswith("status:"):
            value = line[len("status:") :].strip().strip("'\"")
            return value or None
    return None
