"""The listing cache's file (`orange.store.cache` fills it): where it is, how a listing
opens it, and how a new one is built apart and moved into place.

Each version of the cache has its own file (`cache_path`), so an older Orange still
running beside a newer one (a monitor, a dashboard) keeps its own instead of the two
dropping each other's tables.  A file that cannot be used is discarded and rebuilt.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import TypeVar

# The columns of `entries` are an `Entry`'s fields, in order.  One table keyed by
# folder (without a rowid: one b-tree, written in key order), not one of parsed blobs
# and one of folders: a cold cache at 10,000 tasks writes 10,000 rows, not 20,000 and
# their indexes (about 5 us a task less).
SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    task_dir TEXT NOT NULL, blob TEXT NOT NULL, fields TEXT, error TEXT,
    project TEXT NOT NULL, status TEXT NOT NULL, activity TEXT NOT NULL,
    workspace TEXT NOT NULL, workflow TEXT NOT NULL, workflow_rev TEXT NOT NULL,
    task_id TEXT NOT NULL, shard TEXT NOT NULL,
    PRIMARY KEY (shard, task_dir)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS shards (shard TEXT PRIMARY KEY, tree TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
VERSION = "6"
_T = TypeVar("_T")
_TABLES = ("blobs", "shards", "entries")  # "blobs": an older Orange's (version 5)


def cache_path(orange_dir: Path) -> Path:
    """The file of this version of the cache in a repository's Orange folder."""
    return orange_dir / f"cache-{VERSION}.sqlite3"


def in_memory() -> sqlite3.Connection:
    """A cache in memory, for a listing that cannot use the file."""
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA)
    return db


_BUSY_SECONDS = 10.0  # how long a listing waits for another process writing the cache


def build(db_path: Path, fill: Callable[[sqlite3.Connection], _T]) -> _T | None:
    """A new cache file, filled by ``fill`` in a file of this process's own and moved
    into place; what ``fill`` returned (None when that cannot be done: the caller uses
    the shared file).

    Nobody else reads a private file, so it is written without a journal: a cold
    cache at 10,000 tasks writes its 6 MB once, where the WAL wrote them twice (a
    fifth of its SQLite time), and no other listing waits on the build.  Two processes
    listing at once both build; the first file in place stays."""
    _discard_stale(db_path)
    private = db_path.with_name(f"{db_path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    try:
        with closing(_open(private)) as db:
            db.execute("PRAGMA page_size=16384")
            db.execute("PRAGMA journal_mode=OFF")
            db.execute("PRAGMA synchronous=OFF")
            db.executescript(SCHEMA)
            db.execute("INSERT INTO meta VALUES ('version', ?)", (VERSION,))
            with db:
                db.execute("BEGIN")
                filled = fill(db)
            db.execute("PRAGMA journal_mode=WAL")  # as the shared file is used (`connect`)
        _place(private, db_path)
        return filled
    except (sqlite3.Error, OSError):
        return None
    finally:
        discard(private)


_STALE_SECONDS = 600.0  # a build takes seconds: a private file older is a killed one's


def _discard_stale(db_path: Path) -> None:
    """Remove the private files of builds that never finished (their process killed):
    each may hold megabytes.  Only names `build` gives (``<cache>.<pid>.<8 hex>``)."""
    now = time.time()
    for path in db_path.parent.glob(f"{db_path.name}.*.????????"):
        pid, _, tag = path.name.removeprefix(f"{db_path.name}.").partition(".")
        if not (pid.isdigit() and pid.isascii() and len(tag) == 8 and _is_hex(tag)):
            continue
        try:
            if now - path.stat().st_mtime > _STALE_SECONDS:
                path.unlink()
        except OSError:
            pass  # gone meanwhile (another listing's clean-up), or not ours to remove


def _is_hex(text: str) -> bool:
    return all(char in "0123456789abcdef" for char in text)


def _place(private: Path, db_path: Path) -> None:
    """Give a built file the cache's name, unless another listing's came first (it is
    as good, and may be open already)."""
    try:
        os.link(private, db_path)
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links (or the file removed as stale):
        # moved when the name is free.  Two listings racing here can replace a file the
        # other has just placed (no harm unless that one had opened it already).
        if not db_path.exists():
            os.replace(private, db_path)


def _open(db_path: Path) -> sqlite3.Connection:
    return sqlite3.connect(db_path, timeout=_BUSY_SECONDS, isolation_level=None)


def connect(db_path: Path) -> sqlite3.Connection:
    """The shared cache file, in a write transaction (a listing refreshes it)."""
    db = _open(db_path)
    # Pages of 16 KiB for a new file (a no-op on one that has tables): a cold listing at
    # 10,000 tasks writes 6 MB through the WAL, a fifth less system time than with 4 KiB.
    db.execute("PRAGMA page_size=16384")
    db.execute("PRAGMA journal_mode=WAL")
    # A cache: a write lost in a crash is rebuilt from the ref, so no fsync is waited for.
    db.execute("PRAGMA synchronous=OFF")
    db.executescript(SCHEMA)
    row = db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
    if row is None or row[0] != VERSION:
        db.executescript("".join(f"DROP TABLE IF EXISTS {t};" for t in _TABLES) + SCHEMA)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (VERSION,))
    db.execute("BEGIN IMMEDIATE")
    return db


def discard(db_path: Path) -> None:
    """Remove a cache file and its WAL files, where they can be removed."""
    for suffix in ("", "-wal", "-shm"):
        try:
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)
        except OSError:
            pass  # not ours to remove (a directory, say): the listing works uncached
