"""Every task of a snapshot at once: what listings, the monitor and the pool read.

A listing reads each task's frontmatter through the SQLite cache (`cache`), a row per
task folder with the blob it was read from, so only tasks changed since the last
listing are parsed.  It lives apart from `store`, which reads and writes one task: a
single task's update (the call agents make most) never loads the cache or ``sqlite3``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pygit2

from orange.errors import BrokenTaskFile, InvalidInput
from orange.store import cache, taskfile
from orange.store.task import BrokenTask, Task, check_fields

if TYPE_CHECKING:
    from orange.store.store import Snapshot, TaskStore


def entries(snap: Snapshot) -> list[cache.Entry]:
    """The cached frontmatter of every task directory in ``snap``."""
    tasks_tree = None
    if snap.tree is not None and "tasks" in snap.tree:
        obj = snap.tree / "tasks"
        tasks_tree = obj if isinstance(obj, pygit2.Tree) else None
    db_path = cache.cache_path(snap.store.repo.orange_dir())
    return cache.list_entries(db_path, tasks_tree, _parse_for_cache)


def tasks(snap: Snapshot) -> list[Task | BrokenTask]:
    """Every task in ``snap`` (frontmatter only: bodies are not loaded)."""
    out: list[Task | BrokenTask] = []
    for entry in entries(snap):
        if entry.fields is not None:
            out.append(Task(fields=entry.fields, body="", blob_id=entry.blob))
        else:
            name = entry.task_dir.rsplit("/", 1)[-1]
            out.append(
                BrokenTask(
                    path=f"{entry.task_dir}/TASK.md",
                    error=entry.error or "unreadable",
                    blob_id=entry.blob,
                    id=name,
                )
            )
    return out


def all_tasks(store: TaskStore) -> list[Task | BrokenTask]:
    """Every task at the store's current tip."""
    return tasks(store.snapshot())


def check_branch_unique(snap: Snapshot, project: str, branch: str, own_id: str | None) -> None:
    """Refuse ``branch`` if another task of ``project`` has it."""
    for other in tasks(snap):
        if not isinstance(other, Task) or other.id == own_id:
            continue
        if other.project == project and other.branch == branch:
            raise InvalidInput(
                f"branch {branch!r} is already used by task {other.id}",
                hint="choose another branch name",
            )


def _parse_for_cache(
    data: bytes, path: str
) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """A blob's frontmatter for the cache, or why it does not parse, and the
    frontmatter's JSON text when the flat reader made it (else the cache encodes the
    fields).  Whether its id fits its folder is checked per entry (`cache._placed`):
    the same blob may sit in several folders."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"{path}: not UTF-8 text ({exc.reason})", None
    try:
        fields, json_text = taskfile.frontmatter_json(text, where=path)
        if check_fields(fields, path):  # a known text field was written as a number:
            json_text = None  # the JSON of the text it is read as
    except BrokenTaskFile as exc:
        return None, exc.message, None
    return fields, None, json_text
