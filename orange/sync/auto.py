"""Automatic sync, opt-in per project (``orange project update --sync-interval 30s``):
the monitor syncs a project every interval, and shortly after a local write (debounced:
a burst of writes is one sync).  The network is never touched under the store's lock,
so a local transition never waits for it; a failure is logged and retried at the next
interval."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from orange.errors import OrangeError
from orange.projects import Project
from orange.store.store import TaskStore
from orange.sync.remote import project_remote
from orange.sync.stamp import STAMP, mark_synced
from orange.sync.sync import sync_project

if TYPE_CHECKING:
    from orange.runtime.tmux import Tmux

DEBOUNCE = 2.0  # seconds a local write settles before it is pushed


def wait(project: Project, store: TaskStore, now: float) -> float:
    """Seconds until the project's automatic sync is due (0: now)."""
    folder = store.repo.orange_dir()
    last = _mtime(folder / STAMP)
    left = max(0.0, last + project.sync_interval - now)
    wrote = _mtime(folder / "wake")  # every Orange write of the ref touches it
    if wrote > last:
        left = min(left, max(0.0, wrote + DEBOUNCE - now))
    return left


def auto_sync(
    project: Project, store: TaskStore, log: Callable[[str], None], *, tmux: Callable[[], Tmux]
) -> float:
    """Sync the project if due, saying what came and went (an error: one line, logged);
    the seconds until it is due again."""
    if project.sync_interval <= 0:
        return float("inf")
    left = wait(project, store, time.time())
    if left > 0:
        return left
    _run(project, store, log, tmux)
    return float(project.sync_interval)


def _run(
    project: Project, store: TaskStore, log: Callable[[str], None], tmux: Callable[[], Tmux]
) -> None:
    mark_synced(store)  # before: an unreachable remote is tried once per interval
    remote = project_remote(project)
    if remote is None:
        log(f"{project.name}: automatic sync: the repository has no remote to sync with")
        return
    try:
        result = sync_project(project, remote, tmux=tmux)
    except OrangeError as exc:
        log(f"{project.name}: automatic sync with {remote} failed: {exc.message}")
        return
    finally:
        mark_synced(store)  # after: the sync's own writes are not a local write to push
    if result.incoming or result.pushed:
        log(
            f"{project.name}: synced with {remote}: {len(result.incoming)} in, "
            f"{len(result.outgoing)} out, {len(result.conflicts)} conflicts"
        )
    for line in result.local:
        log(f"{project.name}: {line}")


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
