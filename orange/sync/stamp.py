"""When a project last synced: the modification time of ``<git-common-dir>/orange/
last-sync``, touched by every sync (and by the automatic sync before it tries, so an
unreachable remote is tried once per interval)."""

from __future__ import annotations

import os

from orange.store.store import TaskStore

STAMP = "last-sync"


def mark_synced(store: TaskStore) -> None:
    path = store.repo.orange_dir() / STAMP
    try:
        with open(path, "a"):
            pass
        os.utime(path)
    except OSError:
        pass  # a courtesy for the header and the interval; the next sync tries again
