"""Where a project stands against its sync remote, for the dashboard's header: when it
last synced and how many task commits each side has that the other has not."""

from __future__ import annotations

import time
from pathlib import Path

from orange.errors import OrangeError
from orange.projects import Project
from orange.store import layout
from orange.store.store import TaskStore
from orange.sync.remote import project_remote
from orange.sync.stamp import STAMP


def sync_remote(project: Project) -> str | None:
    """The remote the project's tasks travel through (`orange.sync.setup`); None for a
    repository without one."""
    try:
        return project_remote(project)
    except OrangeError:  # a repository gone or unreadable: nothing to say about syncing
        return None


def sync_state(store: TaskStore, remote: str, now: float | None = None) -> str:
    """``synced with origin 3m ago, 2 ahead, 1 behind`` (or ``never synced with origin``)."""
    repo = store.pygit
    theirs = repo.references.get(f"refs/orange/remotes/{remote}/tasks")
    ours = repo.references.get(layout.TASKS_REF)
    stamp = _mtime(store.repo.orange_dir() / STAMP)
    if theirs is None or stamp is None:
        return f"never synced with {remote}"
    ago = _ago((time.time() if now is None else now) - stamp)
    text = f"synced with {remote} {ago}"
    if ours is not None:
        ahead, behind = repo.ahead_behind(ours.target, theirs.target)
        text += f", {ahead} ahead, {behind} behind" if ahead or behind else ", even"
    return text


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s ago"
    if seconds < 3600:
        return f"{seconds // 60}m ago"
    return f"{seconds // 3600}h ago"


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
