"""``refs/orange/snapshots/<task>/<n>``: work saved before a forced release."""

from __future__ import annotations

import pygit2

from orange.store.layout import SNAPSHOTS_PREFIX, valid_task_id
from orange.store.repo import GitRepo


def list_snapshots(repo: GitRepo, task_id: str) -> dict[int, str]:
    """Snapshot number → commit id, for one task."""
    prefix = f"{SNAPSHOTS_PREFIX}/{task_id}/"
    found: dict[int, str] = {}
    for name in repo.pygit.references:
        if name.startswith(prefix) and name.removeprefix(prefix).isdigit():
            found[int(name.removeprefix(prefix))] = str(repo.pygit.references[name].target)
    return found


def add_snapshot(repo: GitRepo, task_id: str, commit: str, message: str) -> str:
    """Record ``commit`` as the task's next snapshot; returns the ref name."""

    if not valid_task_id(task_id):
        raise ValueError(f"bad task id {task_id!r}")
    while True:
        taken = list_snapshots(repo, task_id)
        name = f"{SNAPSHOTS_PREFIX}/{task_id}/{max(taken, default=0) + 1}"
        try:
            repo.pygit.create_reference_direct(name, pygit2.Oid(hex=commit), False, message=message)
        except pygit2.AlreadyExistsError:
            continue  # another writer took that number: take the next
        return name
